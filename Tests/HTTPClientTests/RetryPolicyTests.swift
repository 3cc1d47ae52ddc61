import Foundation
import HTTPClient
import Testing

/// The backoff arithmetic on its own: no server, no waiting.
@Suite("Retry policy")
struct RetryPolicyTests {
    let policy = RetryPolicy(maxAttempts: 4, baseBackoff: .milliseconds(500), maxBackoff: .seconds(30))

    @Test("with full jitter the wait before retry n is at most base * 2^(n-1), capped at maxBackoff")
    func exponentialCaps() {
        let caps = (1...9).map { policy.delay(afterAttempt: $0, retryAfter: nil, jitter: 1) }
        #expect(
            caps == [
                .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30),
                .seconds(30), .seconds(30),
            ])
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, jitter: 0) == .zero)
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, jitter: 0.25) == .milliseconds(500))
        #expect(policy.delay(afterAttempt: 1000, retryAfter: nil, jitter: 1) == .seconds(30))
    }

    @Test("Retry-After is waited exactly, up to maxBackoff")
    func retryAfterWins() {
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(7), jitter: 0) == .seconds(7))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(31), jitter: 1) == .seconds(30))
    }

    @Test("retries are allowed until maxAttempts attempts were made")
    func attempts() {
        #expect((1...5).map { policy.allowsRetry(after: $0) } == [true, true, true, false, false])
    }

    @Test("Retry-After parses delay-seconds and HTTP-dates, and nothing else")
    func parsesRetryAfter() {
        let now = Date(timeIntervalSince1970: 1_750_000_000)  // Sun, 15 Jun 2025 15:06:40 GMT
        #expect(RetryPolicy.retryAfter("7", now: now) == .seconds(7))
        #expect(RetryPolicy.retryAfter(" 0 ", now: now) == .zero)
        #expect(RetryPolicy.retryAfter("Sun, 15 Jun 2025 15:07:00 GMT", now: now) == .seconds(20))
        #expect(RetryPolicy.retryAfter("Sun, 15 Jun 2025 15:00:00 GMT", now: now) == .zero)
        #expect(RetryPolicy.retryAfter("99999999999999999999999", now: now) == .seconds(Int64.max))
        #expect(RetryPolicy.retryAfter("-1", now: now) == nil)
        #expect(RetryPolicy.retryAfter("1.5", now: now) == nil)
        #expect(RetryPolicy.retryAfter("soon", now: now) == nil)
    }
}
