/// Latencies of one measured phase, in nanoseconds (saturating at UInt32.max, about 4.3 s), in
/// storage allocated once up front so that recording never allocates.
public struct LatencySamples {
    private var values: [UInt32]
    public private(set) var count = 0

    public init(capacity: Int) { values = [UInt32](repeating: 0, count: capacity) }

    /// Adds one sample; samples beyond the capacity are dropped (the caller sizes it so none are).
    public mutating func record(nanoseconds: UInt64) {
        guard count < values.count else { return }
        values[count] = UInt32(clamping: nanoseconds)
        count += 1
    }

    /// Nearest-rank percentile `p` (0 < p ≤ 1) in milliseconds over every sample; 0 without any.
    /// Sorts the recorded samples in place the first time.
    public mutating func milliseconds(percentile p: Double) -> Double {
        guard count > 0 else { return 0 }
        if !isSorted {
            values[0..<count].sort()
            isSorted = true
        }
        let rank = min(count, max(1, Int((p * Double(count)).rounded(.up))))
        return Double(values[rank - 1]) / 1_000_000
    }

    private var isSorted = false
}
