import Synchronization

/// Where new trace and parent ids come from: 64-bit numbers that look random and do not repeat
/// within the process, without a system call each (a call served without `traceparent` needs
/// three). The process draws one random seed from the system at the first id; each id is then
/// SplitMix64's output for the next step of a shared counter, a bijection of the counter, so two
/// ids of one process never match and ids of different processes start from unrelated seeds.
/// One atomic add per id, whatever the thread.
enum TraceIDs {
    private static let seed: UInt64 = {
        var random = SystemRandomNumberGenerator()
        return random.next()
    }()
    private static let counter = Atomic<UInt64>(0)

    /// The next id.
    static func next() -> UInt64 {
        let step = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return mix(seed &+ step &* 0x9E37_79B9_7F4A_7C15)
    }

    /// SplitMix64's finalizer (Steele, Lea and Flood, 2014): a bijection of 64-bit numbers that
    /// spreads each input bit over the whole output.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
