import Clients
import Crypto
import Foundation
public import GooglePlay
public import HTTP
import Model
import Observability
import RPC
import Wire

/// Real-time Developer Notifications by Pub/Sub push: `POST /google/rtdn`.
///
/// The push's bearer token is checked first (anything wrong is 401 and nothing is recorded);
/// then the body is decoded, its package checked, and the notification recorded in the ledger's
/// inbox by `messageId` — a duplicate is acknowledged with 204 and changes nothing — answered
/// 204, and processed: the purchase's current state is fetched and recorded with the
/// notification's event. When the ledger cannot record, the answer is 503 and Pub/Sub delivers
/// again. A notification for a package this verifier does not serve is acknowledged (delivering
/// it again cannot change that) and, like every refused push, counted and sampled in memory
/// (`NotificationIngressGuard`), never written to the ledger.
extension GoogleAdapter {
    public static let notificationPath = "/google/rtdn"

    /// Routes the push path on `http`; pushes are checked by `authenticator`.
    public func installNotificationRoute(on http: HTTPServer, authenticator: PubSubPushAuthenticator) {
        http.route(
            "POST", Self.notificationPath,
            ingress.guarded { [self] request in receivePush(request, authenticator: authenticator) })
    }

    /// Handles one push (on an HTTP server thread; blocks for the checks and the ledger). Above
    /// the admission bounds (`NotificationAdmission`) it is answered 503 with `Retry-After`
    /// before anything is checked or recorded; once admitted, a notification answered 204 has
    /// its place in the processing queue.
    public func receivePush(_ request: HTTPRequest, authenticator: PubSubPushAuthenticator) -> HTTPResponse {
        return queue.answer(counting: counters.notifications) { recordPush(request, authenticator: authenticator) }
    }

    /// Checks and records one admitted push: the answer, and the processing to queue when the
    /// notification was recorded for the first time.
    private func recordPush(_ request: HTTPRequest, authenticator: PubSubPushAuthenticator)
        -> (HTTPResponse, BoundedWorkQueue.Work?)
    {
        let header = request.headers.first { $0.key.lowercased() == "authorization" }?.value
        let now = machineNow()
        guard
            let checked = BlockingCall.run(
                timeout: ledgerTimeout,
                { try await authenticator.authenticate(authorizationHeader: header, now: now) })
        else { return (Self.answer(503, "the push token could not be checked in time"), nil) }
        let token: PubSubPushToken
        switch checked {
        case .success(let verified): token = verified
        case .failure(let error):
            if let error = error as? PubSubPushAuthenticationError, error.isRetryable {
                return (Self.answer(503, "\(error)"), nil)
            }
            counters.unauthenticated.increment()
            counters.notifications.refused(.authentication)
            ingress.refused(
                store: "google", reason: "unauthenticated", message: "\(error)", payload: request.body, request: request
            )
            logger.debug("google push refused", ["reason": "\(error)"])
            return (Self.answer(401, "\(error)"), nil)
        }
        let envelope: PubSubPushEnvelope
        let notification: DeveloperNotification
        do {
            envelope = try PubSubPushEnvelope(json: request.body)
            notification = try envelope.developerNotification()
        } catch {
            counters.notifications.refused(.malformed)
            ingress.refused(
                store: "google", reason: "malformed", message: "\(error)", payload: request.body, request: request)
            return (Self.answer(400, "\(error)"), nil)
        }
        guard catalog.packages.contains(notification.packageName) else {
            counters.notifications.refused(.bundleOrPackage)
            ingress.refused(
                store: "google", reason: "wrong_app",
                message: "package \(notification.packageName.prefix(100)) is not served here", payload: envelope.data,
                request: request)
            return (Self.answer(204, ""), nil)
        }
        let entry = InboxEntry(
            // A notification does not say whether the purchase is a test one: filed as production.
            store: .google, environment: .production, notificationID: envelope.messageID,
            notificationType: Self.typeName(notification.kind), signedTimeMilliseconds: notification.eventTimeMillis,
            key: Self.token(of: notification.kind).map { Self.key($0, test: false) },
            rawPayload: String(decoding: envelope.data, as: UTF8.self),
            pushAuthentication: Self.pushAuthentication(token, checkedAt: now))
        let ledger = self.ledger
        let recorded = entry
        guard
            let outcome = BlockingCall.run(
                timeout: ledgerTimeout,
                { try await ledger.recordNotification(RecordNotificationRequest(entry: recorded)) })
        else { return (Self.answer(503, "the ledger did not answer within \(ledgerTimeout)"), nil) }
        switch outcome {
        case .failure(let error as RPCError) where error.code == .invalidArgument:
            return (Self.answer(400, error.message), nil)
        case .failure(let error):
            logger.error("google notification not recorded", ["error": "\(error)"])
            return (Self.answer(503, "the notification could not be recorded; deliver it again"), nil)
        case .success(let response) where response.duplicate:
            counters.notifications.duplicates.increment()
            return (Self.answer(204, ""), nil)
        case .success:
            let published = GooglePlayLifecycle.millis(envelope.publishTime) ?? notification.eventTimeMillis
            counters.notifications.received.increment()
            counters.notifications.lag(.recorded, sent: published, now: nowMilliseconds)
            let work = Self.work(notification.kind)
            return (
                Self.answer(204, ""),
                { [self] in
                    await process(
                        messageID: envelope.messageID, packageName: notification.packageName,
                        eventTime: notification.eventTimeMillis, published: published, work: work)
                }
            )
        }
    }

    /// The checked token's claims as the inbox entry records them (the token itself is not kept).
    static func pushAuthentication(_ token: PubSubPushToken, checkedAt now: Date) -> PushAuthentication {
        func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        return PushAuthentication(
            iss: token.issuer, email: token.email, aud: token.audience, kid: token.keyID,
            iatMilliseconds: milliseconds(token.issuedAt), expMilliseconds: milliseconds(token.expiresAt),
            checkedTimeMilliseconds: milliseconds(now))
    }

    static func answer(_ status: Int, _ message: String) -> HTTPResponse {
        guard status != 204 else { return HTTPResponse(status: 204) }
        let body = (try? JSONSerialization.data(withJSONObject: ["status": message], options: [.sortedKeys])) ?? Data()
        return HTTPResponse.json(String(decoding: body, as: UTF8.self), status: status)
    }

    /// What a notification asks for.
    static func work(_ kind: DeveloperNotification.Kind) -> Work {
        switch kind {
        case .subscription(let notification):
            .subscription(
                type: notification.notificationType.rawValue, token: notification.purchaseToken,
                productID: notification.subscriptionId ?? "")
        case .oneTimeProduct(let notification):
            .oneTimeProduct(
                type: notification.notificationType.rawValue, token: notification.purchaseToken,
                productID: notification.sku)
        case .voidedPurchase(let notification):
            .voided(
                token: notification.purchaseToken, orderID: notification.orderId,
                productType: notification.productType.rawValue, refundType: notification.refundType.rawValue)
        case .test, .unknown: .nothing
        }
    }

    /// What a recorded notification asks for, read back from its inbox entry (whose raw payload
    /// is the notification's `data`).
    static func work(from entry: InboxEntry) -> (packageName: String, eventTime: Int64, work: Work)? {
        guard let notification = try? DeveloperNotification(json: Array(entry.rawPayload.utf8)) else { return nil }
        return (notification.packageName, notification.eventTimeMillis, work(notification.kind))
    }

    /// The notification's type as the inbox, its events and the ledger's history record it:
    /// Google's name (`SUBSCRIPTION_CANCELED`, `ONE_TIME_PRODUCT_PURCHASED`), or for a code Google
    /// has not documented, the kind and the code (`SUBSCRIPTION_NOTIFICATION_99`).
    static func typeName(_ kind: DeveloperNotification.Kind) -> String {
        switch kind {
        case .subscription(let notification): typeName(subscription: notification.notificationType.rawValue)
        case .oneTimeProduct(let notification): typeName(oneTimeProduct: notification.notificationType.rawValue)
        case .voidedPurchase: "VOIDED_PURCHASE"
        case .test: "TEST"
        case .unknown: "UNKNOWN"
        }
    }

    /// A subscription notification's type (`typeName(_:)`) from its code.
    static func typeName(subscription code: Int) -> String {
        SubscriptionNotificationType(rawValue: code).name ?? "SUBSCRIPTION_NOTIFICATION_\(code)"
    }

    /// A one-time product notification's type (`typeName(_:)`) from its code.
    static func typeName(oneTimeProduct code: Int) -> String {
        OneTimeProductNotification.NotificationType(rawValue: code).name ?? "ONE_TIME_PRODUCT_NOTIFICATION_\(code)"
    }

    static func token(of kind: DeveloperNotification.Kind) -> String? {
        switch kind {
        case .subscription(let notification): notification.purchaseToken
        case .oneTimeProduct(let notification): notification.purchaseToken
        case .voidedPurchase(let notification): notification.purchaseToken
        case .test, .unknown: nil
        }
    }
}
