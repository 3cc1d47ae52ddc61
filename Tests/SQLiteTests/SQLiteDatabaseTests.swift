import Foundation
import SQLite
import Testing

@Suite("SQLite database")
struct SQLiteDatabaseTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-\(UUID().uuidString).db").path
    }

    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    @Test("opens in WAL mode with synchronous=FULL")
    func durableSettings() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let database = try SQLiteDatabase(path: path)
        #expect(database.journalMode == "wal")
        #expect(try database.scalarInt("PRAGMA synchronous") == 2)  // FULL
        #expect(try database.integrityCheck() == "ok")
    }

    @Test("parameters of every kind round-trip through a reused prepared statement")
    func roundTrip() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let database = try SQLiteDatabase(path: path)
        try database.execute("CREATE TABLE t (i INTEGER, s TEXT, b BLOB, n TEXT)")
        let values: [[SQLiteValue]] = [
            [.integer(.max), .text("grüße ✓"), .blob([0, 1, 0, 255]), .null],
            [.integer(.min), .text(""), .blob([]), .null],
        ]
        for row in values { try database.query("INSERT INTO t VALUES (?1, ?2, ?3, ?4)", row) }
        let rows = try database.query("SELECT i, s, b, n FROM t ORDER BY rowid")
        #expect(rows.columnNames == ["i", "s", "b", "n"])
        #expect(rows.rows == values)
        #expect(rows.int64(0, "i") == .max)
        #expect(rows.string(0, "s") == "grüße ✓")
        #expect(rows.bytes(0, "b") == [0, 1, 0, 255])
    }

    @Test("a transaction commits when its body returns and rolls back when it throws")
    func transactions() throws {
        struct Abort: Error {}
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let database = try SQLiteDatabase(path: path)
        try database.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        try database.transaction { tx in
            try tx.query("INSERT INTO t VALUES (?1)", [.text("a")])
            try tx.query("INSERT INTO t VALUES (?1)", [.text("b")])
        }
        #expect(throws: Abort.self) {
            try database.transaction { tx in
                try tx.query("INSERT INTO t VALUES (?1)", [.text("c")])
                throw Abort()
            }
        }
        #expect(try database.scalarInt("SELECT COUNT(*) FROM t") == 2)
    }

    @Test("a constraint violation is reported as one, with SQLite's message")
    func constraint() throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let database = try SQLiteDatabase(path: path)
        try database.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        try database.query("INSERT INTO t VALUES (?1)", [.text("a")])
        #expect {
            try database.query("INSERT INTO t VALUES (?1)", [.text("a")])
        } throws: { error in
            guard let error = error as? SQLiteError else { return false }
            return error.isConstraintViolation && error.message == "UNIQUE constraint failed: t.k"
        }
        #expect(throws: SQLiteError(code: 25, message: "statement takes 1 parameters, 0 given")) {
            try database.query("INSERT INTO t VALUES (?1)")
        }
    }

    @Test("a file that cannot be opened names the path")
    func unopenable() {
        #expect {
            _ = try SQLiteDatabase(path: "/nonexistent-dir/x.db")
        } throws: { error in
            "\(error)".contains("cannot open /nonexistent-dir/x.db")
        }
    }
}
