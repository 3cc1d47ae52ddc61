import PostgreSQL
import Testing

@Suite("PostgreSQL connection errors")
struct PostgresConnectionErrorTests {
    static let password = "Hunter2-sekrit"

    @Test("a refused connection names host, port and database but never the password")
    func refused() async throws {
        // Nothing listens on port 1 of loopback.
        let pool = try PostgresPool(url: "postgresql://ledger:\(Self.password)@127.0.0.1:1/ledger_test", size: 1)
        defer { pool.close() }
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { db in try db.execute("SELECT 1") }
        }
        let text = String(describing: try #require(error))
        #expect(error?.code == .connection && error?.isConnectionFailure == true)
        #expect(text.contains("127.0.0.1:1/ledger_test"))
        #expect(text.contains("Connection refused"))
        #expect(!text.contains(Self.password))
    }

    @Test(
        "a malformed URL is refused without echoing the password",
        arguments: [
            "postgresql://ledger:\(password)%zz@127.0.0.1:5432/ledger_test",
            "postgresql://ledger:\(password)@[::1/ledger_test",
            "postgresql://ledger@127.0.0.1:5432/ledger_test?password=\(password)&nonsense=1",
            "host=127.0.0.1 password='\(password)' nonsense=1",
        ])
    func malformed(url: String) throws {
        let error = #expect(throws: PostgresError.self) { try PostgresPool(url: url, size: 1) }
        #expect(error?.code == .invalidURL)
        #expect(error.map { !String(describing: $0).contains(Self.password) } == true)
        #expect(error.map { !$0.message.isEmpty } == true)
    }
}
