public import Foundation

/// When a store API client tries a call again: how many attempts, and how long it waits before
/// each retry (full-jitter exponential backoff, or the server's `Retry-After`). A plain value
/// with no I/O, so its arithmetic is tested on its own.
public struct RetryPolicy: Sendable, Equatable {
    /// The most attempts of one request, the first included (at least 1).
    public var maxAttempts: Int
    /// The backoff cap before the first retry; it doubles for each later retry.
    public var baseBackoff: Duration
    /// No wait is longer than this, whatever the backoff or `Retry-After` say.
    public var maxBackoff: Duration

    /// A policy of at most `maxAttempts` attempts, waiting up to `baseBackoff` doubled per retry
    /// and never longer than `maxBackoff`.
    public init(maxAttempts: Int, baseBackoff: Duration, maxBackoff: Duration) {
        self.maxAttempts = maxAttempts
        self.baseBackoff = baseBackoff
        self.maxBackoff = maxBackoff
    }

    /// Whether another attempt is allowed after `attempt` (1 for the first) failed retryably.
    public func allowsRetry(after attempt: Int) -> Bool { attempt < maxAttempts }

    /// The wait before the retry that follows failed attempt `attempt` (1 for the first).
    ///
    /// With `retryAfter` (the server's `Retry-After`) the wait is exactly that, capped at
    /// `maxBackoff`. Otherwise it is `jitter` (in 0...1, uniformly random in production) times
    /// `min(maxBackoff, baseBackoff * 2^(attempt - 1))`.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration?, jitter: Double) -> Duration {
        if let retryAfter { return min(max(retryAfter, .zero), maxBackoff) }
        let exponent = min(max(attempt - 1, 0), 62)
        let base = baseBackoff.timeInterval
        let ceiling = min(maxBackoff.timeInterval, base * pow(2, Double(exponent)))
        let fraction = min(max(jitter, 0), 1)
        return min(.milliseconds(Int64((ceiling * fraction * 1000).rounded(.down))), maxBackoff)
    }

    /// The wait a `Retry-After` header asks for: delay-seconds (a non-negative integer) or an
    /// HTTP-date, measured from `now` (a date in the past means no wait). Nil for anything else.
    public static func retryAfter(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            // A number too long for an Int64 is a wait far beyond any cap.
            return .seconds(Int64(text) ?? Int64.max)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        let seconds = max(date.timeIntervalSince(now), 0)
        return .milliseconds(Int64(min(seconds, 1e9) * 1000))
    }

}
