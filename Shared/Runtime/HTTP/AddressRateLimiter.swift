public import Observability
import Synchronization

/// A token bucket per client address: `rate` requests a second, up to `burst` at once. The
/// table of addresses is bounded: when it is full, addresses whose buckets have refilled are
/// forgotten (they are as good as new), and if none has, the new address shares one overflow
/// bucket, so many addresses cost no more memory than `maxAddresses` of them.
public final class AddressRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: UInt64
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var overflow: Bucket
    }

    public let rate: Double
    public let burst: Double
    public let maxAddresses: Int
    private let state: Mutex<State>
    private let refused = Atomic<Int>(0)
    private let clock: any ServiceClock

    /// A limiter of `rate` requests a second per address, `burst` at once, on `clock`'s time.
    public init(rate: Double, burst: Double, maxAddresses: Int = 16_384, clock: any ServiceClock = SystemClock()) {
        precondition(rate > 0 && burst >= 1 && maxAddresses > 0)
        self.rate = rate
        self.burst = burst
        self.maxAddresses = maxAddresses
        self.clock = clock
        state = Mutex(State(overflow: Bucket(tokens: burst, updated: clock.nanoseconds())))
    }

    /// Requests refused so far.
    public var refusedCount: Int { refused.load(ordering: .relaxed) }

    /// Whether `address` has a token now, without taking it.
    public func hasToken(_ address: String) -> Bool { hasToken(address, now: clock.nanoseconds()) }

    /// Takes a token for `address` now; false when its bucket is empty.
    public func allow(_ address: String) -> Bool { allow(address, now: clock.nanoseconds()) }

    /// Whether `address` has a token at monotonic time `now`, without taking it.
    public func hasToken(_ address: String, now: UInt64) -> Bool {
        state.withLock { state in
            let bucket =
                state.buckets[address]
                ?? (state.buckets.count >= maxAddresses ? state.overflow : Bucket(tokens: burst, updated: now))
            return refill(bucket, now).tokens >= 1
        }
    }

    /// Takes a token for `address`, at monotonic time `now`; false when its bucket is empty.
    public func allow(_ address: String, now: UInt64) -> Bool {
        let allowed = state.withLock { state -> Bool in
            if state.buckets[address] == nil && state.buckets.count >= maxAddresses {
                state.buckets = state.buckets.filter { refill($0.value, now).tokens < burst }
            }
            if state.buckets[address] == nil && state.buckets.count >= maxAddresses {
                return take(&state.overflow, now)
            }
            var bucket = state.buckets[address] ?? Bucket(tokens: burst, updated: now)
            let allowed = take(&bucket, now)
            state.buckets[address] = bucket
            return allowed
        }
        if !allowed { refused.add(1, ordering: .relaxed) }
        return allowed
    }

    private func refill(_ bucket: Bucket, _ now: UInt64) -> Bucket {
        let elapsed = now > bucket.updated ? Double(now - bucket.updated) / 1e9 : 0
        return Bucket(tokens: min(burst, bucket.tokens + elapsed * rate), updated: max(now, bucket.updated))
    }

    private func take(_ bucket: inout Bucket, _ now: UInt64) -> Bool {
        bucket = refill(bucket, now)
        guard bucket.tokens >= 1 else { return false }
        bucket.tokens -= 1
        return true
    }
}
