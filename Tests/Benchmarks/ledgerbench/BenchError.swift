/// Why a benchmark run could not complete. Low ratios are results, not errors; this is for
/// what stopped the measurement itself (a process that would not start, a broken reply, …).
struct BenchError: Error, CustomStringConvertible {
    let message: String

    init(_ message: String) { self.message = message }

    var description: String { message }
}
