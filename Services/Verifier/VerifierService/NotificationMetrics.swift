import AppStore
import GooglePlay
import HTTP
import Observability
import Wire

/// One store's notification families on the verifier's `/metrics` page:
/// `notifications_received_total`, `notifications_processed_total`,
/// `notifications_duplicate_total`, `notification_validation_failures_total{reason}`,
/// `notification_processing_errors_total{reason}`, `notification_delivery_lag_seconds{stage}`,
/// `notifications_shed_total{reason}` and `notification_backlog`, each labelled `store`. Every series of a fixed label set exists from the start, at 0.
struct NotificationMetrics: Sendable {
    /// Why a delivery was refused before it was recorded.
    enum ValidationFailure: String, Sendable, CaseIterable {
        case malformed, signature
        case certificateChain = "certificate_chain"
        case environment
        case bundleOrPackage = "bundle_or_package"
        case authentication
        case tooOld = "too_old"
        case other
    }

    /// Why a recorded notification could not be applied (reconciliation tries it again).
    enum ProcessingError: String, Sendable, CaseIterable {
        case storeAPI = "store_api"
        case ledger, unrecordable, other
    }

    /// Where the delivery lag is measured to, from the store's signed time (App Store) or the
    /// push's publish time (Pub/Sub): the notification recorded in the inbox, or the state it
    /// brought recorded in the ledger.
    enum Stage: String, Sendable, CaseIterable {
        case recorded, processed
    }

    /// The lag buckets' upper bounds in seconds, from 100 ms to Google's three days.
    static let lagBuckets: [Double] = [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 21_600, 86_400, 259_200]

    /// Verified (or authenticated) notifications recorded in the inbox for the first time.
    let received: Counter
    /// Recorded notifications whose state the ledger then recorded.
    let processed: Counter
    /// Deliveries of a notification the inbox already had.
    let duplicates: Counter
    /// Notifications admitted and not yet processed (`NotificationAdmission`).
    let backlog: Gauge
    private let failures: [ValidationFailure: Counter]
    private let shed: [NotificationAdmission.Reason: Counter]
    private let errors: [ProcessingError: Counter]
    private let lags: [Stage: Histogram]

    init(store: String, registry: MetricsRegistry?) {
        let labels = ["store": store]
        func counter(_ name: String, _ help: String, _ extra: Labels = [:]) -> Counter {
            registry?.counter(name, help: help, labels: labels.merging(extra) { $1 }) ?? Counter()
        }
        received = counter("notifications_received_total", "Notifications recorded in the inbox for the first time.")
        processed = counter("notifications_processed_total", "Recorded notifications whose state the ledger recorded.")
        duplicates = counter("notifications_duplicate_total", "Deliveries of a notification the inbox already had.")
        backlog =
            registry?.gauge(
                "notification_backlog",
                help: "Notifications admitted and not yet processed (being recorded, queued or being processed).",
                labels: labels) ?? Gauge()
        var shed: [NotificationAdmission.Reason: Counter] = [:]
        for reason in NotificationAdmission.Reason.allCases {
            shed[reason] = counter(
                "notifications_shed_total",
                "Deliveries answered 503 with Retry-After before anything was recorded, by the bound they met.",
                ["reason": reason.rawValue])
        }
        self.shed = shed
        var failures: [ValidationFailure: Counter] = [:]
        for reason in ValidationFailure.allCases {
            failures[reason] = counter(
                "notification_validation_failures_total", "Deliveries refused before they were recorded, by reason.",
                ["reason": reason.rawValue])
        }
        self.failures = failures
        var errors: [ProcessingError: Counter] = [:]
        for reason in ProcessingError.allCases {
            errors[reason] = counter(
                "notification_processing_errors_total",
                "Recorded notifications whose processing failed (reconciliation retries them), by reason.",
                ["reason": reason.rawValue])
        }
        self.errors = errors
        var lags: [Stage: Histogram] = [:]
        for stage in Stage.allCases {
            lags[stage] =
                registry?.histogram(
                    "notification_delivery_lag_seconds",
                    help:
                        "From the store's signed time (App Store) or publish time (Pub/Sub) to the notification recorded in the inbox (stage recorded) or its state recorded (stage processed).",
                    buckets: Self.lagBuckets, labels: ["store": store, "stage": stage.rawValue])
                ?? Histogram(bounds: Self.lagBuckets)
        }
        self.lags = lags
    }

    /// Counts a delivery refused for `reason`.
    func refused(_ reason: ValidationFailure) { failures[reason]?.increment() }

    /// Counts a delivery refused by admission control, and answers it.
    func shed(_ refusal: NotificationAdmission.Refusal) -> HTTPResponse {
        shed[refusal.reason]?.increment()
        return refusal.response
    }

    /// Counts a processing failure caused by `error`.
    func failed(_ error: any Error) { failed(Self.reason(error)) }

    /// Counts a processing failure for `reason`.
    func failed(_ reason: ProcessingError) { errors[reason]?.increment() }

    /// Observes the lag to `stage` of a notification the store sent at `sent` (epoch ms), now `now`.
    func lag(_ stage: Stage, sent: Int64?, now: Int64) {
        guard let sent, sent > 0 else { return }
        lags[stage]?.observe(fromMilliseconds: sent, to: now)
    }

    /// The reason a processing error counts under.
    static func reason(_ error: any Error) -> ProcessingError {
        switch error {
        case is AppStoreAPIError, is GooglePlayAPIError: return .storeAPI
        case is RPCError: return .ledger
        case let error as AppleAdapterError:
            switch error {
            case .unrecordable: return .unrecordable
            case .storeNotFound, .storeOtherEnvironment, .storeUnavailable, .storeRefusedRequest, .storeDataRefused,
                .transactionNotFound:
                return .storeAPI
            default: return .other
            }
        case let error as GoogleAdapterError:
            switch error {
            case .unrecordable: return .unrecordable
            case .storeNotFound, .storeUnavailable, .storeRefusedRequest, .storeFailed, .presentedPurchase,
                .actionRefused:
                return .storeAPI
            default: return .other
            }
        default: return .other
        }
    }

    /// The reason an App Store signed-data check's failure counts under.
    static func reason(_ code: AppleVerificationError.Code) -> ValidationFailure {
        switch code {
        case .malformed: .malformed
        case .unsupportedAlgorithm, .badSignature: .signature
        case .badChain, .badCertificate: .certificateChain
        case .wrongApp: .bundleOrPackage
        case .wrongEnvironment: .environment
        default: .other
        }
    }
}
