public import Foundation
public import HTTP
public import Observability
import Synchronization

/// What the notification endpoints do before a delivery costs the ledger anything: a rate
/// limit per client address on refused deliveries (`NOTIFY_RATE_PER_ADDRESS`,
/// `NOTIFY_BURST_PER_ADDRESS`), and, for what is refused, a count and a few of the latest
/// samples per reason in memory instead of a ledger row each (anyone may post anything to these
/// paths). Only refusals spend an address's tokens: a store delivering valid notifications at any
/// rate is never answered 429 (Apple's first retry of a failed delivery comes an hour later),
/// while an address whose deliveries keep failing is refused before they are checked.
public final class NotificationIngressGuard: Sendable {
    /// One refused delivery as kept for an operator.
    public struct Sample: Sendable, Equatable {
        public let receivedMilliseconds: Int64
        public let store: String
        public let clientAddress: String
        public let reason: String
        public let message: String
        /// The first `samplePayloadBytes` of what was posted.
        public let payload: String
    }

    /// Samples kept per reason, and reasons kept (later new reasons share "other").
    public static let samplesPerReason = 8
    public static let maxReasons = 32
    public static let samplePayloadBytes = 1024

    let limiter: AddressRateLimiter?
    private let limited = Atomic<Int>(0)
    private let samples = Mutex<[String: [Sample]]>([:])
    private let counts = Mutex<[String: Int]>([:])

    /// A guard with a limit of `rate` deliveries a second per address (`burst` at once), on
    /// `clock`'s time; nil `rate` turns the limit off.
    public init(rate: Double?, burst: Double, clock: any ServiceClock = SystemClock()) {
        limiter = rate.map { AddressRateLimiter(rate: $0, burst: max(1, burst), clock: clock) }
    }

    /// Wraps a notification handler: a client whose refused deliveries have spent its tokens
    /// gets 429 and the handler is not called.
    public func guarded(_ handler: @escaping HTTPHandler) -> HTTPHandler {
        { [self] request in
            if let limiter, !limiter.hasToken(request.clientAddress) {
                limited.add(1, ordering: .relaxed)
                var response = HTTPResponse.text(
                    "too many requests from this address; deliver again later\n", status: 429)
                response.headers.append(("Retry-After", "1"))
                return response
            }
            return handler(request)
        }
    }

    /// Counts a refused delivery of `store` for `reason` (a short code) and keeps it as the
    /// newest sample of that reason.
    public func refused(
        store: String, reason: String, message: String, payload: some Collection<UInt8>, request: HTTPRequest,
        now: Date = Date()
    ) {
        _ = limiter?.allow(request.clientAddress)
        let key = "\(store)/\(reason)"
        let sample = Sample(
            receivedMilliseconds: Int64(now.timeIntervalSince1970 * 1000), store: store,
            clientAddress: request.clientAddress, reason: reason, message: String(message.prefix(500)),
            payload: String(decoding: payload.prefix(Self.samplePayloadBytes), as: UTF8.self))
        samples.withLock { samples in
            let slot = samples[key] != nil || samples.count < Self.maxReasons ? key : "\(store)/other"
            var list = samples[slot, default: []]
            list.append(sample)
            if list.count > Self.samplesPerReason { list.removeFirst(list.count - Self.samplesPerReason) }
            samples[slot] = list
        }
        counts.withLock { counts in
            let slot = counts[key] != nil || counts.count < Self.maxReasons ? key : "\(store)/other"
            counts[slot, default: 0] += 1
        }
    }

    /// The samples kept, newest last, by reason.
    public var recentSamples: [String: [Sample]] { samples.withLock { $0 } }

    /// Writes `verifier_notifications_refused_total{store,reason}` and the rate limit's refusals.
    public func writeMetrics(into text: inout MetricsText) {
        text.family(
            "verifier_notifications_refused_total", type: "counter",
            help:
                "Notification deliveries refused before the ledger, by store and reason (samples at GET /rejected on OPS_LISTEN)."
        )
        for (key, count) in counts.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
            text.sample("verifier_notifications_refused_total", ["store": parts[0], "reason": parts[1]], Double(count))
        }
        text.family(
            "verifier_notifications_rate_limited_total", type: "counter",
            help: "Notification deliveries answered 429: their client address's refused deliveries passed its rate.")
        text.sample("verifier_notifications_rate_limited_total", [:], Double(limited.load(ordering: .relaxed)))
    }

    /// `GET /rejected`: the kept samples as JSON, by reason.
    public func samplesResponse() -> HTTPResponse {
        var object: [String: [[String: Any]]] = [:]
        for (key, list) in recentSamples {
            object[key] = list.map {
                [
                    "received_ms": $0.receivedMilliseconds, "store": $0.store, "client": $0.clientAddress,
                    "reason": $0.reason, "message": $0.message, "payload": $0.payload,
                ]
            }
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return .json(String(decoding: data, as: UTF8.self))
    }
}
