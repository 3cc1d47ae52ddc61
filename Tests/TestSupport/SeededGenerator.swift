import Foundation

/// SplitMix64: a small deterministic random number generator, so a failing run can be
/// repeated with the seed it printed.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// `TEST_SEED` (hexadecimal) when set, to repeat or vary a run; else `fallback`.
    public static func seed(default fallback: UInt64) -> UInt64 {
        ProcessInfo.processInfo.environment["TEST_SEED"].flatMap { UInt64($0, radix: 16) } ?? fallback
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
