/// One raw-engine run: `rows` appends' worth of inserts in transactions of `batch` rows over
/// `clients` connections, in `seconds`; with the device flushes it caused when known.
struct ReferenceRun {
    var tool: String
    var batch: Int
    var clients: Int
    var rows: Int
    var seconds: Double
    var flushes: Int?

    var rowsPerSecond: Double { seconds > 0 ? Double(rows) / seconds : 0 }
    var transactions: Int { rows / max(batch, 1) }
}
