public import AppStore
import Clients
import Crypto
import Foundation
public import HTTP
import HTTPClient
import Model
import Observability
import RPC
import Wire

/// App Store Server Notifications V2: `POST {"signedPayload": "<JWS>"}` to
/// `/apple/notifications/production` or `/apple/notifications/sandbox`.
///
/// Verify → record in the ledger's inbox → answer 200 → process. A duplicate
/// `notificationUUID` is answered 200 and changes nothing. Data that fails verification gets
/// 400 and is counted and sampled by reason in memory (`NotificationIngressGuard`), never
/// written to the ledger: anyone can post to this path. When the ledger cannot record, the answer
/// is 503 and Apple delivers again.
///
/// Processing records the state the notification's own signed data says when that data is a
/// complete snapshot of the subscription (`AppleStatusCall`): an auto-renewable subscription's
/// notification of a type that names the chain's newest transaction (SUBSCRIBED, DID_RENEW,
/// DID_CHANGE_RENEWAL_PREF, DID_CHANGE_RENEWAL_STATUS, DID_FAIL_TO_RENEW, EXPIRED,
/// GRACE_PERIOD_EXPIRED, OFFER_REDEEMED, PRICE_INCREASE, RENEWAL_EXTENDED), with signed renewal
/// info and `status`, signed after everything the ledger holds and whose transaction is the
/// newest the ledger knows. No App Store Server API call is made for it: a renewal wave costs no
/// status call per subscriber. Any other notification (a refund, a revocation or a consumption
/// request, which may name an older transaction; a one-time product; missing renewal info or
/// status; a late or replayed delivery) asks the API for the subscription's current state and
/// records that with the notification's event; when the API fails, what the signed notification
/// itself proves is recorded and the inbox entry is marked failed, for reconciliation to finish.
extension AppleAdapter {
    /// The ingress path of `environment`.
    public static func notificationPath(_ environment: AppleEnvironment) -> String {
        "/apple/notifications/\(environment.rawValue.lowercased())"
    }

    /// Routes each served environment's notification path on `http`.
    public func installNotificationRoutes(on http: HTTPServer) {
        for environment in verifiers.keys {
            http.route(
                "POST", Self.notificationPath(environment),
                ingress.guarded { [self] request in receiveNotification(request, environment: environment) })
        }
    }

    /// Handles one delivery (on an HTTP server thread; blocks for the ledger's answer). Above
    /// the admission bounds (`NotificationAdmission`) it is answered 503 with `Retry-After`
    /// before anything is checked or recorded; once admitted, a notification answered 200 has
    /// its place in the processing queue.
    public func receiveNotification(_ request: HTTPRequest, environment: AppleEnvironment) -> HTTPResponse {
        guard let verifier = verifiers[environment] else {
            return Self.answer(404, "this verifier does not serve \(environment.rawValue)")
        }
        return queue.answer(counting: counters.notifications) {
            recordDelivery(request, verifier: verifier, environment: environment)
        }
    }

    /// Checks and records one admitted delivery: the answer, and the processing to queue when
    /// the notification was recorded for the first time.
    private func recordDelivery(
        _ request: HTTPRequest, verifier: AppleSignedDataVerifier, environment: AppleEnvironment
    ) -> (HTTPResponse, BoundedWorkQueue.Work?) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
            let signedPayload = object["signedPayload"] as? String
        else {
            let message = "the body must be a JSON object with a signedPayload string"
            counters.notifications.refused(.malformed)
            ingress.refused(
                store: "apple", reason: "malformed", message: message, payload: request.body, request: request)
            return (Self.answer(400, message), nil)
        }
        let notification: AppleNotification
        do {
            notification = try verifier.verifyNotification(signedPayload, now: now())
        } catch {
            if error.code == .retryable { return (Self.answer(503, "\(error.code): \(error.message)"), nil) }
            counters.notifications.refused(NotificationMetrics.reason(error.code))
            ingress.refused(
                store: "apple", reason: "\(error.code)", message: error.message, payload: signedPayload.utf8,
                request: request)
            logger.debug("apple notification rejected", ["code": "\(error.code)", "reason": error.message])
            return (Self.answer(400, "\(error.code): \(error.message)"), nil)
        }
        if revocation != nil {
            let outcome = BlockingCall.run(timeout: ledgerTimeout) {
                try await self.checkRevocation(signedPayload)
            }
            switch outcome {
            case nil: return (Self.answer(503, "the OCSP check did not finish in time"), nil)
            case .failure(let error as AppleVerificationError) where error.code != .retryable:
                counters.notifications.refused(.certificateChain)
                ingress.refused(
                    store: "apple", reason: "\(error.code)", message: error.message, payload: signedPayload.utf8,
                    request: request)
                return (Self.answer(400, "\(error.code): \(error.message)"), nil)
            case .failure(let error): return (Self.answer(503, "\(error)"), nil)
            case .success: break
            }
        }
        let entry = Self.inboxEntry(notification, signedPayload: signedPayload, environment: environment)
        let ledger = self.ledger
        guard
            let outcome = BlockingCall.run(
                timeout: ledgerTimeout,
                { try await ledger.recordNotification(RecordNotificationRequest(entry: entry)) })
        else {
            return (Self.answer(503, "the ledger did not answer within \(ledgerTimeout)"), nil)
        }
        switch outcome {
        case .failure(let error as RPCError) where error.code == .invalidArgument:
            return (Self.answer(400, error.message), nil)
        case .failure(let error):
            logger.error("apple notification not recorded", ["error": "\(error)"])
            return (Self.answer(503, "the notification could not be recorded; deliver it again"), nil)
        case .success(let response) where response.duplicate:
            counters.notifications.duplicates.increment()
            return (Self.answer(200, "duplicate"), nil)
        case .success:
            counters.notifications.received.increment()
            counters.notifications.lag(.recorded, sent: notification.signedDate, now: nowMilliseconds)
            return (
                Self.answer(200, "recorded"),
                { [self] in
                    await process(
                        notification, signedPayload: signedPayload, verifier: verifier, environment: environment)
                }
            )
        }
    }

    static func answer(_ status: Int, _ message: String) -> HTTPResponse {
        let body = (try? JSONSerialization.data(withJSONObject: ["status": message], options: [.sortedKeys])) ?? Data()
        return HTTPResponse.json(String(decoding: body, as: UTF8.self), status: status)
    }

    /// The inbox entry of a verified notification.
    static func inboxEntry(_ notification: AppleNotification, signedPayload: String, environment: AppleEnvironment)
        -> InboxEntry
    {
        InboxEntry(
            store: .apple, environment: environment.storeEnvironment, notificationID: notification.notificationUUID,
            notificationType: notification.notificationType.rawValue, subtype: notification.subtype?.rawValue,
            signedTimeMilliseconds: notification.signedDate, rawPayload: signedPayload)
    }

    /// A notification found in Get Notification History: verified, put in the inbox like a
    /// delivered one, and processed when the inbox did not have it. Throws when the ledger did
    /// not take it for a reason that may pass, so that the history cursor stays and the next
    /// pass asks for it again; one that does not verify, or that the ledger refuses as invalid,
    /// is logged and skipped, as a delivery of it is answered 400 (asking again gives the same
    /// bytes).
    func recordFromHistory(_ signedPayload: String, environment: AppleEnvironment) async throws(RPCError) {
        guard let verifier = verifiers[environment] else { return }
        let notification: AppleNotification
        do {
            notification = try verifier.verifyNotification(signedPayload, now: now())
        } catch {
            logger.warning("a notification from Apple's history does not verify", ["error": "\(error)"])
            return
        }
        let entry = Self.inboxEntry(notification, signedPayload: signedPayload, environment: environment)
        let response: RecordNotificationResponse
        do {
            response = try await ledger.recordNotification(RecordNotificationRequest(entry: entry))
        } catch {
            guard error.code == .invalidArgument else { throw error }
            logger.warning("the ledger refuses a notification from Apple's history", ["error": "\(error)"])
            return
        }
        guard !response.duplicate else { return }
        counters.notifications.received.increment()
        counters.notifications.lag(.recorded, sent: notification.signedDate, now: nowMilliseconds)
        counters.reconciliation.discovered.increment()
        await process(notification, signedPayload: signedPayload, verifier: verifier, environment: environment)
    }

    // MARK: Processing

    /// Applies a recorded notification from its stored payload (inbox retries), verifying it
    /// again; never throws: a failure marks the inbox entry failed with the reason.
    func process(signedPayload: String, environment: AppleEnvironment) async {
        guard let verifier = verifiers[environment] else { return }
        let notification: AppleNotification
        do {
            notification = try verifier.verifyNotification(signedPayload, now: now())
        } catch {
            logger.error("a recorded apple notification no longer verifies", ["error": "\(error)"])
            return
        }
        await process(notification, signedPayload: signedPayload, verifier: verifier, environment: environment)
    }

    /// Processes a notification verified a moment ago (ingress, history): no second check.
    func process(
        _ notification: AppleNotification, signedPayload: String, verifier: AppleSignedDataVerifier,
        environment: AppleEnvironment
    ) async {
        do {
            let complete = try await apply(
                notification, signedPayload: signedPayload, verifier: verifier, environment: environment)
            if complete {
                counters.notifications.processed.increment()
                counters.notifications.lag(.processed, sent: notification.signedDate, now: nowMilliseconds)
            } else {
                // Only what the notification itself proves was recorded: the API did not answer.
                counters.notifications.failed(.storeAPI)
                logger.warning(
                    "apple notification recorded from its own data only; the App Store API did not answer",
                    ["notification_id": notification.notificationUUID])
            }
        } catch {
            counters.notifications.failed(error)
            logger.warning(
                "apple notification not processed; reconciliation retries it",
                ["notification_id": notification.notificationUUID, "error": "\(error)"])
            await markFailed(notification.notificationUUID, "\(error)")
        }
    }

    /// Records what `notification` means; true when it is fully processed, false when only the
    /// notification's own data could be recorded (the entry is then marked failed).
    private func apply(
        _ notification: AppleNotification, signedPayload: String, verifier: AppleSignedDataVerifier,
        environment: AppleEnvironment
    ) async throws -> Bool {
        let id = notification.notificationUUID
        guard let data = notification.data, let signedTransaction = data.signedTransactionInfo else {
            // A summary, an external purchase token, app data or a test: no subscription changes.
            _ = try await ledger.markInbox(MarkInboxRequest(store: .apple, notificationID: id, status: .processed))
            return true
        }
        let transaction = try verifier.verifyTransaction(signedTransaction, now: now())
        let renewal = try data.signedRenewalInfo.map { try verifier.verifyRenewalInfo($0, now: now()) }
        var apiFailure: (any Error)?
        var current = AppleCurrentState(
            transaction: transaction, renewalInfo: renewal, status: data.status, signedTransaction: signedTransaction,
            signedRenewalInfo: data.signedRenewalInfo)
        let callReason = try await statusCallReason(notification, own: current)
        if callReason != nil {
            do {
                current = try await currentState(of: transaction, environment: environment, verifier: verifier)
            } catch {
                apiFailure = error
            }
        }
        let subscription = try AppleLifecycle.subscription(
            transaction: current.transaction, renewalInfo: current.renewalInfo, status: current.status, now: now(),
            notificationSignedDate: notification.signedDate)
        // The notification's own transaction (which may be an older one of the chain: a refund,
        // a consumption request) and the newest one the API answered: each proves its period.
        let periods = [
            AppleLifecycle.period(transaction, raw: signedTransaction),
            callReason != nil && apiFailure == nil
                ? AppleLifecycle.period(current.transaction, raw: current.signedTransaction) : nil,
        ].compactMap { $0 }
        let event = LifecycleEvent(
            key: subscription.key,
            kind: AppleLifecycle.eventKind(type: notification.notificationType, subtype: notification.subtype),
            storeTimeMilliseconds: notification.signedDate, storeType: notification.notificationType.rawValue,
            storeSubtype: notification.subtype?.rawValue, notificationID: id, state: subscription.state,
            rawPayload: signedPayload,
            detail: apiFailure == nil
                ? nil : "recorded from the notification alone: the App Store Server API did not answer",
            rawTransaction: current.signedTransaction, rawRenewalInfo: current.signedRenewalInfo)
        guard let apiFailure else {
            _ = try await ledger.recordContent(
                RecordVerifiedStateRequest(
                    subscription: subscription, events: [event], notificationID: id, periods: periods),
                keyPrefix: "apple-notification-\(id)-")
            if notification.notificationType == .consumptionRequest {
                await answerConsumptionRequest(
                    notification, transaction: transaction, environment: environment, verifier: verifier)
            }
            return true
        }
        // What the notification alone proves: its transaction's period, and its state only where
        // the ledger has none newer (never a state of another transaction); reconciliation
        // fetches the whole truth later.
        _ = try await ledger.recordContent(
            RecordVerifiedStateRequest(subscription: subscription, events: [event], periods: periods, partial: true),
            keyPrefix: "apple-notification-\(id)-signed-")
        await markFailed(id, "\(apiFailure)")
        return false
    }

    /// Why the App Store Server API is asked before `notification` is recorded, or nil when its
    /// own signed data (`own`) is the subscription's state (`AppleStatusCall`). Reads the
    /// ledger's state only when the notification alone does not decide; throws when that read
    /// fails.
    private func statusCallReason(_ notification: AppleNotification, own: AppleCurrentState) async throws
        -> AppleStatusCall.Reason?
    {
        if let reason = AppleStatusCall.reasonBeforeLedger(
            type: notification.notificationType, transaction: own.transaction, renewalInfo: own.renewalInfo,
            status: own.status, notificationSignedDate: notification.signedDate)
        {
            return reason
        }
        // A transaction that cannot be normalized alone (no product, say): the API's may be.
        guard
            let candidate = try? AppleLifecycle.subscription(
                transaction: own.transaction, renewalInfo: own.renewalInfo, status: own.status, now: now(),
                notificationSignedDate: notification.signedDate)
        else { return .incomplete }
        return AppleStatusCall.reason(
            type: notification.notificationType, transaction: own.transaction, renewalInfo: own.renewalInfo,
            status: own.status, notificationSignedDate: notification.signedDate, candidate: candidate,
            recorded: try await ledger.subscription(candidate.key))
    }

    /// Answers a CONSUMPTION_REQUEST under the consumption policy, when it answers automatically:
    /// Send Consumption Information for the transaction the notification names, audited as the
    /// policy's action. A failure is logged; an operator can still answer (Apple allows 12 hours).
    private func answerConsumptionRequest(
        _ notification: AppleNotification, transaction: AppleTransaction, environment: AppleEnvironment,
        verifier: AppleSignedDataVerifier
    ) async {
        guard let policy = consumptionPolicy, policy.answerAutomatically, policy.customerConsented,
            let transactionID = transaction.transactionId
        else { return }
        let kind = AppleLifecycle.productKind(transaction.type)
        do {
            let body = try Self.consumptionInformation(
                deliveryStatus: policy.deliveryStatus, sampleContentProvided: policy.sampleContentProvided,
                consumptionPercentage: kind == .autoRenewable ? nil : policy.consumptionPercentage,
                refundPreference: policy.refundPreference, kind: kind)
            _ = try await sendConsumption(
                body, transaction: transaction, id: transactionID, environment: environment, verifier: verifier,
                actor: "policy APPLE_CONSUMPTION_POLICY_FILE",
                reason: "automatic answer to CONSUMPTION_REQUEST \(notification.notificationUUID)"
                    + (notification.data?.consumptionRequestReason.map { " (\($0))" } ?? ""))
        } catch {
            logger.error(
                "cannot answer an apple consumption request automatically",
                ["transaction": transactionID, "error": "\(error)"])
        }
    }

    private func markFailed(_ notificationID: String, _ reason: String) async {
        do {
            _ = try await ledger.markInbox(
                MarkInboxRequest(
                    store: .apple, notificationID: notificationID, status: .failed, error: String(reason.prefix(2000))))
        } catch {
            logger.error("cannot mark an apple notification failed", ["error": "\(error)"])
        }
    }

    /// The verifier for data the API answered: the asked environment's, unless the client was
    /// allowed to ask the other environment (error 4040010) and the data says it came from there.
    func apiVerifier(for signed: String, environment: AppleEnvironment, fallback: AppleSignedDataVerifier)
        -> AppleSignedDataVerifier
    {
        guard let claimed = Self.claimedEnvironment(signed), claimed != environment, let other = verifiers[claimed]
        else {
            return fallback
        }
        return other
    }

    /// The subscription's current transaction, renewal info and status from the App Store
    /// Server API (all statuses for an auto-renewable subscription; the transaction itself for
    /// anything else), each piece of signed data verified.
    func currentState(
        of transaction: AppleTransaction, environment: AppleEnvironment, verifier: AppleSignedDataVerifier
    ) async throws -> AppleCurrentState {
        guard let transactionID = transaction.transactionId else {
            throw AppStoreAPIError(.invalidRequest, "the transaction has no transactionId")
        }
        return try await currentState(
            original: transaction.originalTransactionId ?? transactionID, transactionID: transactionID,
            kind: AppleLifecycle.productKind(transaction.type), environment: environment, verifier: verifier)
    }

    /// `currentState(of:…)` from ids alone: the original transaction id (all statuses) for an
    /// auto-renewable subscription, the transaction id for anything else.
    func currentState(
        original: String, transactionID: String, kind: ProductKind?, environment: AppleEnvironment,
        verifier: AppleSignedDataVerifier
    ) async throws -> AppleCurrentState {
        if kind != .autoRenewable {
            let signed = try await api.transactionInfo(transactionID: transactionID, environment: environment)
            let answering = apiVerifier(for: signed, environment: environment, fallback: verifier)
            return AppleCurrentState(
                transaction: try answering.verifyTransaction(signed, now: now()), renewalInfo: nil, status: nil,
                signedTransaction: signed, signedRenewalInfo: nil)
        }
        let statuses = try await api.allSubscriptionStatuses(transactionID: original, environment: environment)
        for group in statuses.data {
            for last in group.lastTransactions where last.originalTransactionId == original {
                guard let signed = last.signedTransactionInfo else { continue }
                let answering = apiVerifier(for: signed, environment: environment, fallback: verifier)
                let current = try answering.verifyTransaction(signed, now: now())
                let renewal = try last.signedRenewalInfo.map { try answering.verifyRenewalInfo($0, now: now()) }
                return AppleCurrentState(
                    transaction: current, renewalInfo: renewal, status: last.status, signedTransaction: signed,
                    signedRenewalInfo: last.signedRenewalInfo)
            }
        }
        throw AppStoreAPIError(
            .invalidResponse, "the statuses name no subscription with original transaction \(original)")
    }

    /// The period of every transaction of the chain `original` in the App Store's transaction
    /// history, each verified; empty when the history cannot be read (the current transaction's
    /// period is recorded anyway, and a later pass fills in the rest).
    func historyPeriods(original: String, environment: AppleEnvironment, verifier: AppleSignedDataVerifier) async
        -> [Period]
    {
        guard let history = try? await api.transactionHistory(transactionID: original, environment: environment)
        else { return [] }
        var periods: [Period] = []
        for signed in history {
            let answering = apiVerifier(for: signed, environment: environment, fallback: verifier)
            guard let transaction = try? answering.verifyTransaction(signed, now: now()),
                (transaction.originalTransactionId ?? transaction.transactionId) == original,
                let period = AppleLifecycle.period(transaction, raw: signed)
            else { continue }
            periods.append(period)
        }
        return periods
    }
}

/// What the App Store Server API answered for a subscription now: its newest transaction,
/// renewal info and status, verified, with the signed data they came from (kept for audit).
struct AppleCurrentState: Sendable {
    var transaction: AppleTransaction
    var renewalInfo: AppleRenewalInfo?
    var status: Int?
    var signedTransaction: String
    var signedRenewalInfo: String?
}
