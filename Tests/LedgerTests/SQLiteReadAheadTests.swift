import Foundation
import SQLite
import Testing

@testable import LedgerService

@Suite("SQLite read-ahead")
struct SQLiteReadAheadTests {
    /// A read-ahead over a table `states` of `rows` rows (rowids 1…rows) in a fresh file, in
    /// spans of 100 rowids at most `window` ahead, handed to `body`; the file is removed after.
    static func withReadAhead(
        rows: Int, table: String = "states", through: Int64, window: Int64, _ body: (SQLiteReadAhead) throws -> Void
    ) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("readahead-\(UUID().uuidString).db")
            .path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let database = try SQLiteDatabase(path: path)
        try database.execute("CREATE TABLE states (state BLOB NOT NULL)")
        try database.transaction { tx in
            for _ in 0..<rows { try tx.query("INSERT INTO states (state) VALUES (zeroblob(300))") }
        }
        try body(
            SQLiteReadAhead(path: path, table: table, after: 0, through: through, spanRows: 100, windowRows: window))
    }

    @Test("spans run a window ahead of the scan, never past it, and count every row of the range once")
    func windowAheadOfTheScan() throws {
        try Self.withReadAhead(rows: 5_000, through: 5_000, window: 1_000) { readAhead in
            #expect(readAhead.settled() == (0, 0))
            readAhead.advance(to: 0)
            #expect(readAhead.settled() == (1_000, 1_000))
            readAhead.advance(to: 2_450)
            // Spans are whole: the window's end is rounded up to the next span's end.
            #expect(readAhead.settled() == (3_500, 3_500))
            readAhead.advance(to: 4_900)
            #expect(readAhead.settled() == (5_000, 5_000))
        }
    }

    @Test("a stopped read-ahead starts no more spans")
    func stopped() throws {
        try Self.withReadAhead(rows: 2_000, through: 2_000, window: 500) { readAhead in
            readAhead.advance(to: 0)
            #expect(readAhead.settled() == (500, 500))
            readAhead.stop()
            readAhead.advance(to: 1_500)
            #expect(readAhead.settled() == (500, 500))
        }
    }

    @Test("a table it cannot read stops it after the spans already started; the scan reads its rows itself")
    func unreadable() throws {
        try Self.withReadAhead(rows: 10, table: "missing", through: 10_000, window: 1_000) { readAhead in
            readAhead.advance(to: 0)
            let settled = readAhead.settled()
            #expect(settled.counted == 0 && settled.through <= 1_000)
            readAhead.advance(to: 5_000)
            #expect(readAhead.settled() == settled)
        }
    }
}
