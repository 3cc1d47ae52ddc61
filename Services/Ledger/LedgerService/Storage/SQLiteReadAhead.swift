import Dispatch
import SQLite
import Synchronization

/// Reads the pages of a table's rowid range into the operating system's page cache ahead of
/// a scan that reads them in rowid order, on connections and threads of its own.
///
/// A table's leaf pages lie in rowid order but far apart in the file, between the pages of the
/// tables written beside it (a year of `periods` rows sits between two pages of states). Read
/// one at a time, each is a wait on the disk; several spans read at once keep the disk busy
/// with several requests, and the scan then finds its pages in memory. Each span is a
/// `count(*)` over its rowids: it visits the span's leaf pages and decodes no row.
final class SQLiteReadAhead: Sendable {
    /// Spans read at once, each on a connection and a thread of its own: the disk's queue depth
    /// (a thread waiting on a read costs no core).
    static let lanes = 16
    /// Rowids per span (about seventy leaf pages of states of a year's renewals).
    static let spanRows: Int64 = 512
    /// How far the spans run ahead of the scan, in rowids (about 40 MB of such states).
    static let windowRows: Int64 = 64 * 1024

    /// A serial queue (a thread of its own while it has work) and the connection it reads on.
    // `connection` is only touched on `queue`.
    private final class Lane: @unchecked Sendable {
        let queue: DispatchQueue
        var connection: SQLiteDatabase?

        init(_ index: Int) { queue = DispatchQueue(label: "ledger.sqlite.read-ahead.\(index)") }
    }

    private struct State {
        /// Lanes not reading a span now.
        var idle: [Int]
        /// Where the next span starts (its rowids are after this one).
        var next: Int64
        /// Where the scan is.
        var scanned: Int64
        var stopped = false
        /// Rows the spans have counted (every row of the range once, when all is read).
        var counted: Int64 = 0
    }

    private let path: String
    private let sql: String
    private let highest: Int64
    private let spanRows: Int64
    private let windowRows: Int64
    private let lanes: [Lane]
    private let state: Mutex<State>
    /// Entered by each span under way.
    private let underWay = DispatchGroup()

    /// Reads `table` of the database at `path` ahead of a scan starting after `rowID`, up to
    /// `highest`, in spans of `spanRows` at most `windowRows` ahead. Nothing is read until the
    /// first `advance`.
    init(
        path: String, table: String, after rowID: Int64, through highest: Int64,
        spanRows: Int64 = SQLiteReadAhead.spanRows,
        windowRows: Int64 = SQLiteReadAhead.windowRows
    ) {
        self.path = path
        self.highest = highest
        self.spanRows = spanRows
        self.windowRows = windowRows
        sql = "SELECT count(*) AS n FROM \(table) WHERE rowid >= ?1 AND rowid <= ?2"
        lanes = (0..<Self.lanes).map(Lane.init)
        state = Mutex(State(idle: Array(lanes.indices), next: rowID, scanned: rowID))
    }

    /// Where the spans started so far end, and the rows they counted, once those under way
    /// are done (blocks until then).
    func settled() -> (through: Int64, counted: Int64) {
        underWay.wait()
        return state.withLock { ($0.next, $0.counted) }
    }

    /// The scan has read every row up to `rowID`: spans up to a window past it are started,
    /// as many at once as there are lanes.
    func advance(to rowID: Int64) {
        state.withLock { $0.scanned = max($0.scanned, rowID) }
        schedule()
    }

    /// Starts no more spans (those under way finish).
    func stop() { state.withLock { $0.stopped = true } }

    private func schedule() {
        while let (index, span) = takeSpan() {
            let lane = lanes[index]
            underWay.enter()
            lane.queue.async { [self] in
                var counted: Int64?
                do {
                    let connection = try lane.connection ?? SQLiteDatabase(path: path)
                    lane.connection = connection
                    let rows = try connection.query(sql, [.integer(span.lowerBound), .integer(span.upperBound)])
                    counted = rows.int64(0, "n") ?? 0
                } catch {
                    // Only a hint: the scan reads the rows itself, from the disk if need be.
                    counted = nil
                }
                state.withLock { state in
                    state.idle.append(index)
                    if let counted { state.counted += counted } else { state.stopped = true }
                }
                schedule()
                underWay.leave()
            }
        }
    }

    /// A free lane and the span it reads next, when the window has room.
    private func takeSpan() -> (Int, ClosedRange<Int64>)? {
        state.withLock { state in
            guard !state.stopped, state.next < highest, state.next < state.scanned + windowRows,
                let index = state.idle.popLast()
            else { return nil }
            let span = (state.next + 1)...min(highest, state.next + spanRows)
            state.next = span.upperBound
            return (index, span)
        }
    }
}
