import Glibc

/// CLOCK_MONOTONIC in nanoseconds (a vDSO call, cheap enough for every batch and read).
public enum MonotonicTime {
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
