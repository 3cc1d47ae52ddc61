import Foundation

/// Where the PostgreSQL client programs are: the server's own bin directory first, then PATH.
public struct PostgresTools: Sendable {
    public let pgbench: String
    public let psql: String
    public let pgDump: String

    /// Throws naming the first program found in neither.
    public init(preferred directory: String) throws(BenchError) {
        func find(_ name: String) throws(BenchError) -> String {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            guard let path = ChildProcess.resolve(name) else {
                throw BenchError("\(name) not found in \(directory) or on PATH (scripts/install-deps bench)")
            }
            return path
        }
        pgbench = try find("pgbench")
        psql = try find("psql")
        pgDump = try find("pg_dump")
    }
}
