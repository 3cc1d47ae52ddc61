import Foundation

/// Notifications processed a second, over the last `window` seconds: a count per second of the
/// machine's time in a ring, so recording one is a few stores and memory stays fixed.
struct ProcessingRate: Sendable, Equatable {
    /// Seconds the rate is measured over.
    static let window = 10

    private var seconds = [Int64](repeating: .min, count: Self.window)
    private var counts = [Int](repeating: 0, count: Self.window)

    /// Counts one notification processed at `date`.
    mutating func record(at date: Date) {
        let second = Self.second(date)
        let slot = Int(((second % Int64(Self.window)) + Int64(Self.window)) % Int64(Self.window))
        if seconds[slot] != second {
            seconds[slot] = second
            counts[slot] = 0
        }
        counts[slot] += 1
    }

    /// Processed a second over the last `window` seconds up to `date` (over fewer when the
    /// first one in the window came later); nil when none was.
    func perSecond(at date: Date) -> Double? {
        let now = Self.second(date)
        var total = 0
        var first = now
        for (slot, second) in seconds.enumerated() where second > now - Int64(Self.window) && second <= now {
            total += counts[slot]
            first = min(first, second)
        }
        guard total > 0 else { return nil }
        return Double(total) / Double(now - first + 1)
    }

    private static func second(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }
}
