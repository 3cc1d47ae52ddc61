/// One raw-engine run: `rows` appends' worth of inserts in transactions of `batch` rows over
/// `clients` connections, in `seconds`; with the device flushes it caused when known.
struct ReferenceRun {
    var tool: String
    var batch: Int
    var clients: Int
    var rows: Int
    var seconds: Double
    var flushes: Int?
    /// Whether it inserted sequential keys into empty tables (`ReferenceRows.empty`).
    var empty = false

    var rowsPerSecond: Double { seconds > 0 ? Double(rows) / seconds : 0 }
    var transactions: Int { rows / max(batch, 1) }
    /// How the table names it.
    var label: String { "\(tool) \(batch)/tx c\(clients)" + (empty ? " empty" : "") }
}

/// What a raw-engine run inserts.
enum ReferenceRows {
    /// The appends of one ledger phase: the keys its writers sent, in the order they sent them
    /// (one of each writer, then the next of each), starting from what the ledger's database held
    /// when the phase began. The judged comparison: the same rows on the same tables.
    case phase(name: String, writers: Int, workload: AppendWorkload)
    /// Sequential keys into empty tables: each insert lands beside the last one, so a
    /// transaction touches the fewest pages. Informational.
    case empty

    /// The subscription id of row `index` (from 0).
    func storeID(_ index: Int) -> String {
        switch self {
        case .phase(let name, let writers, let workload):
            workload.storeID(phase: name, writer: index % writers, sequence: index / writers)
        case .empty:
            "ref-\(index + 1)"
        }
    }

    var isEmpty: Bool {
        if case .empty = self { return true }
        return false
    }
}
