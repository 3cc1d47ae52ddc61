import Foundation
import PostgreSQL
import SQLite

/// Where a ledger process keeps its data for one test run, and how the test reads it back.
/// SQLite: a file in a fresh temporary folder. PostgreSQL: a fresh database `crash_<uuid>` on
/// the server named by `LEDGER_TEST_POSTGRES_URL`, dropped by `remove()`.
struct LedgerStoreFixture: Sendable {
    enum Engine: String, Sendable, CaseIterable, CustomStringConvertible {
        case sqlite
        case postgres

        var description: String { rawValue }

        /// SQLite always; PostgreSQL when `LEDGER_TEST_POSTGRES_URL` names a server.
        static var available: [Engine] { serverURL == nil ? [.sqlite] : [.sqlite, .postgres] }
    }

    static var serverURL: String? { ProcessInfo.processInfo.environment["LEDGER_TEST_POSTGRES_URL"] }

    let engine: Engine
    /// The ledger's variables for this store (`LEDGER_STORE`, `LEDGER_SQLITE_PATH` or `LEDGER_POSTGRES_URL`).
    let environment: [String: String]
    private let directory: URL?
    private let sqlitePath: String?
    private let database: (name: String, url: String, adminURL: String)?

    /// Makes the store: a temporary folder, or a new PostgreSQL database.
    /// Throws `PostgresError` when the server refuses, or a file error.
    static func make(_ engine: Engine) throws -> LedgerStoreFixture {
        switch engine {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "ledger-process-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let path = directory.appendingPathComponent("ledger.sqlite").path
            return LedgerStoreFixture(
                engine: engine, environment: ["LEDGER_STORE": "sqlite", "LEDGER_SQLITE_PATH": path],
                directory: directory, sqlitePath: path, database: nil)
        case .postgres:
            let name = "crash_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            guard let adminURL = serverURL, var components = URLComponents(string: adminURL) else {
                throw PostgresError(code: .invalidURL, message: "LEDGER_TEST_POSTGRES_URL is not a postgresql:// URL")
            }
            components.path = "/\(name)"
            guard let url = components.string else {
                throw PostgresError(code: .invalidURL, message: "cannot name database \(name) in the URL")
            }
            try PostgresConnection(url: adminURL).execute("CREATE DATABASE \(name)")
            return LedgerStoreFixture(
                engine: engine, environment: ["LEDGER_STORE": "postgres", "LEDGER_POSTGRES_URL": url],
                directory: nil, sqlitePath: nil, database: (name, url, adminURL))
        }
    }

    /// One integer from the store, e.g. `SELECT COUNT(*) FROM changes`. SQLite opens the file
    /// read-only; call it only once no ledger writes to the file any more.
    func scalar(_ sql: String) throws -> Int64? {
        if let sqlitePath {
            return try SQLiteDatabase(path: "file:\(sqlitePath)?mode=ro").scalarInt(sql)
        }
        let rows = try PostgresConnection(url: database!.url).execute(sql)
        return try rows.int64(0, 0)
    }

    /// `PRAGMA integrity_check` of the SQLite file, opened read-only; nil for PostgreSQL.
    func integrityCheck() throws -> String? {
        guard let sqlitePath else { return nil }
        return try SQLiteDatabase(path: "file:\(sqlitePath)?mode=ro").integrityCheck()
    }

    /// Deletes the folder or drops the database (forcing out sessions a killed ledger left).
    func remove() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
        if let database {
            _ = try? PostgresConnection(url: database.adminURL).execute(
                "DROP DATABASE IF EXISTS \(database.name) WITH (FORCE)")
        }
    }
}
