/// Why a benchmark run could not complete. Low ratios are results, not errors; this is for
/// what stopped the measurement itself (a process that would not start, a broken reply, …).
public struct BenchError: Error, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
