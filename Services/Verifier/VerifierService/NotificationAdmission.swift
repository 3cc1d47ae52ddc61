public import Config
import Foundation
public import HTTP

/// Admission control of the notification ingress (both stores): the rules that keep the
/// verifier bounded when deliveries come faster than it processes them. A delivery is admitted
/// while fewer than `Limits.backlog` notifications are admitted and not yet processed (being
/// checked and recorded, waiting in the processing queue, or being processed) and fewer than
/// `Limits.recording` deliveries are being checked and recorded (waiting for the ledger).
/// Above either bound it is answered 503 with `Retry-After` before anything is checked or
/// recorded; the store delivers it again. `BoundedWorkQueue` keeps the counts and acts on the
/// decision made here.
public enum NotificationAdmission {
    /// The bounds, from `NOTIFY_BACKLOG_LIMIT` and `NOTIFY_RECORDING_LIMIT`.
    public struct Limits: Sendable, Equatable {
        /// Notifications admitted and not yet processed, per store.
        public var backlog: Int
        /// Deliveries being checked and recorded at once, per store.
        public var recording: Int

        public static let `default` = Limits(backlog: 1_000, recording: 64)

        public init(backlog: Int, recording: Int) {
            self.backlog = backlog
            self.recording = recording
        }

        /// The bounds from the environment. Throws `ConfigError` naming a bound that cannot
        /// work: below 1 (every delivery would be refused), or a recording bound above the
        /// backlog bound (each delivery being recorded holds a place in the backlog).
        public init(environment: EnvironmentReader) throws(ConfigError) {
            let backlog = try environment.int(
                "NOTIFY_BACKLOG_LIMIT", default: Self.default.backlog, range: 1...1_000_000)
            let recording = try environment.int(
                "NOTIFY_RECORDING_LIMIT", default: min(Self.default.recording, backlog), range: 1...1_000_000)
            guard recording <= backlog else {
                throw ConfigError(
                    variable: "NOTIFY_RECORDING_LIMIT",
                    problem: "\(recording) is above NOTIFY_BACKLOG_LIMIT (\(backlog)): it must be at most that")
            }
            self.init(backlog: backlog, recording: recording)
        }
    }

    /// The processing queue's counts a decision reads.
    struct Counts: Sendable, Equatable {
        var running: Int
        var waiting: Int
        /// Deliveries admitted and being checked and recorded.
        var reserved: Int

        var backlog: Int { running + waiting + reserved }
    }

    /// Which bound refused a delivery (the `reason` label of `notifications_shed_total`).
    public enum Reason: String, Sendable, CaseIterable {
        case backlog, recording
    }

    /// A delivery refused: why, what the backlog was, and when to deliver again.
    public struct Refusal: Sendable, Equatable, Error {
        public let reason: Reason
        public let backlog: Int
        public let retryAfterSeconds: Int
    }

    /// The shortest and longest `Retry-After`, in seconds; the answer while no processing rate
    /// has been measured (nothing finished in the last `ProcessingRate.window` seconds).
    public static let retryAfterBounds = 1...300
    public static let unmeasuredRetryAfter = 10

    /// Nil when a delivery is admitted under `counts`; else the refusal, whose `Retry-After`
    /// is the time the backlog takes to clear at `perSecond` (nil: not measured).
    static func decide(_ counts: Counts, limits: Limits, perSecond: Double?) -> Refusal? {
        let reason: Reason
        if counts.reserved >= limits.recording {
            reason = .recording
        } else if counts.backlog >= limits.backlog {
            reason = .backlog
        } else {
            return nil
        }
        return Refusal(
            reason: reason, backlog: counts.backlog,
            retryAfterSeconds: retryAfter(backlog: counts.backlog, perSecond: perSecond))
    }

    /// Seconds for `backlog` notifications to be processed at `perSecond`, rounded up, within
    /// `retryAfterBounds`; `unmeasuredRetryAfter` without a rate.
    static func retryAfter(backlog: Int, perSecond: Double?) -> Int {
        guard let perSecond, perSecond > 0 else { return unmeasuredRetryAfter }
        let seconds = (Double(backlog) / perSecond).rounded(.up)
        let bounds = retryAfterBounds
        return Int(min(Double(bounds.upperBound), max(Double(bounds.lowerBound), seconds)))
    }
}

extension NotificationAdmission.Refusal {
    /// The answer: 503, `Retry-After`, and a JSON body saying why.
    public var response: HTTPResponse {
        let why =
            switch reason {
            case .backlog: "\(backlog) notifications are waiting to be processed"
            case .recording: "too many deliveries are being recorded at once"
            }
        let object: [String: Any] = [
            "status": "overloaded: \(why); deliver again in \(retryAfterSeconds) s",
            "reason": reason.rawValue, "retry_after_seconds": retryAfterSeconds,
        ]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        var response = HTTPResponse.json(String(decoding: body, as: UTF8.self), status: 503)
        response.headers.append(("Retry-After", "\(retryAfterSeconds)"))
        return response
    }
}

extension BoundedWorkQueue {
    /// The answer to one delivery: when it is not admitted, 503 with `Retry-After` (counted in
    /// `metrics`) and `record` is not called; else what `record` answers, the processing it
    /// returns queued in the place the delivery held (given back when it returns none).
    func answer(
        counting metrics: NotificationMetrics, _ record: () -> (HTTPResponse, Work?)
    ) -> HTTPResponse {
        switch admit() {
        case .failure(let refusal):
            return metrics.shed(refusal)
        case .success(let reservation):
            let (response, work) = record()
            if let work { submit(reservation, work) } else { release(reservation) }
            return response
        }
    }
}
