import Glibc

/// Nanoseconds on CLOCK_MONOTONIC: the time base of deadlines, timers and latency figures.
public enum MonotonicClock {
    @inline(__always)
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to 0...UInt64.max.
    public var nanosecondsClamped: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (product, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product.saturatingAdd(UInt64(attoseconds / 1_000_000_000))
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` where that would overflow (deadlines far away).
    public func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
