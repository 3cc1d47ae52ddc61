import Foundation
import Model
import Wire

/// An action an operator takes from the console: a form posted to `/action/NAME`, confirmed on a
/// second page, then one call of a service made with the operator's transport. Each is the call
/// the matching `subctl` verb makes (the same request types and method names).
enum ConsoleAction: String, CaseIterable, Sendable {
    /// Verifier/RefreshSubscription: read a subscription from its store again.
    case refresh
    /// Ledger/ReplayInbox: process a store notification again (`subctl replay`).
    case replayInbox = "replay-inbox"
    /// Ledger/GrantEntitlement: give a capability for a number of days.
    case grant
    /// Ledger/RevokeGrant.
    case revokeGrant = "revoke-grant"
    /// Verifier/ExtendAppleRenewalDate (`subctl apple extend`).
    case extendRenewal = "extend-renewal"
    /// Verifier/RefundGoogleOrder (`subctl google refund`).
    case refundGoogleOrder = "refund-google-order"
    /// Verifier/RevokeGooglePurchase (`subctl google revoke`).
    case revokeGoogle = "revoke-google"
    /// Verifier/SendAppleConsumptionInformation (`subctl apple consumption`).
    case consumption
    /// Ledger/ReplayDeliveries: deliver a dead letter again (`subctl events replay`).
    case redeliverWebhook = "redeliver-webhook"
    /// Verifier/RestorePurchases with a reason: read a purchase no account holds from its store
    /// again and link it to the customer's account (acknowledging a Google Play one).
    case restore

    /// What the form's button says.
    var label: String {
        switch self {
        case .refresh: "Refresh from the store"
        case .replayInbox: "Replay"
        case .grant: "Grant access"
        case .revokeGrant: "Revoke grant"
        case .extendRenewal: "Extend renewal date"
        case .refundGoogleOrder: "Refund order"
        case .revokeGoogle: "Revoke with refund"
        case .consumption: "Send consumption information"
        case .redeliverWebhook: "Deliver again"
        case .restore: "Restore to an account"
        }
    }

    /// An action made from a posted form: what it will do, in words, and the call that does it.
    struct Prepared: Sendable {
        /// Exactly what will happen to what.
        var summary: String
        /// Fields the confirmation adds to the form (a fresh idempotency key), so that posting it
        /// twice does the thing once.
        var added: [(name: String, value: String)] = []
        /// Where the outcome is shown when not on the page the form came from (a restored
        /// purchase's new account).
        var shownAt: String?
        /// Makes the call and says what the service answered.
        var perform: @Sendable (Console) async throws(SubctlError) -> String
    }

    /// The call `form` asks for, checked; throws `invalidArgument` naming a missing or bad field.
    /// `reason` is the operator's, already checked to be there.
    func prepare(_ form: FormFields, reason: String) throws(SubctlError) -> Prepared {
        switch self {
        case .refresh:
            let key = try Self.key(form)
            let request = RefreshSubscriptionRequest(key: key, reason: reason)
            return Prepared(
                summary: "Read \(Console.storeName(key.store)) subscription \(key) from the store again "
                    + "(RefreshSubscription) and record what the store answers, with your reason in its audit trail"
                    + (key.store == .google
                        ? "; a purchase Play still waits to see acknowledged is acknowledged once an account holds it."
                        : ".")
            ) { console throws(SubctlError) in
                let answer = try await console.call(
                    console.services.verifier, VerifierRPC.refreshSubscription.name, request,
                    as: RefreshSubscriptionResponse.self)
                return "refreshed \(key): \(answer.changed ? "changed" : "unchanged"), state "
                    + "\(Console.stateName(answer.subscription?.state)) (recorded at ledger position \(answer.position))"
            }
        case .replayInbox:
            let store = try Self.store(form)
            let id = try Self.required(form, "notification_id")
            let command = LedgerCommand.replay(store, notificationID: id, reason: reason)
            let request = ReplayInboxRequest(store: store, notificationID: id, reason: reason)
            return Prepared(
                summary: "Put \(Console.storeName(store)) notification \(id) back to pending in the ledger's inbox "
                    + "(ReplayInbox): the verifier processes it again at its next reconciliation pass (every "
                    + "\(store == .google ? "GOOGLE" : "APPLE")_RECONCILE_INTERVAL, an hour unless configured). To bring "
                    + "its subscription up to date now, refresh it from the store instead."
            ) { console throws(SubctlError) in
                let answer = try await console.call(
                    console.services.ledger, command.method, request, as: MarkInboxResponse.self)
                return "put back to pending for the verifier's next reconciliation pass: "
                    + (answer.entry.map(OutputText.inboxEntry) ?? id)
            }
        case .grant:
            let account = try Self.required(form, "account")
            let capability = try Self.required(form, "capability")
            let days = try Self.number(form, "days", 1...3650)
            let key = form["idempotency_key"].flatMap { $0.isEmpty ? nil : $0 } ?? "console-" + Self.uuid()
            let request = GrantEntitlementRequest(
                idempotencyKey: key, accountID: account, capability: capability,
                durationMilliseconds: Int64(days) * 86_400_000, reason: reason)
            return Prepared(
                summary: "Grant capability \(capability) to account \(account) for \(days) days from now "
                    + "(GrantEntitlement); nothing changes at the stores.",
                added: form["idempotency_key"] == nil ? [("idempotency_key", key)] : []
            ) { console throws(SubctlError) in
                // A capability the product policy does not name would grant nothing: refused
                // before the ledger records it. (When the entitlement service cannot say, the
                // ledger, which keeps grants, decides alone.)
                let known = try? await console.call(
                    console.services.entitlement, EntitlementRPC.checkAccess.name,
                    CheckAccessRequest(accountID: account, capability: capability), as: CheckAccessResponse.self)
                if known?.reason == .unknownCapability {
                    throw SubctlError(
                        .invalidArgument,
                        "capability \"\(capability)\" is not in the entitlement service's product policy, so a "
                            + "grant of it would give nothing: check its spelling; nothing was granted")
                }
                let answer = try await console.call(
                    console.services.ledger, LedgerRPC.grantEntitlement.name, request, as: GrantEntitlementResponse.self
                )
                let grant = answer.grant
                return "granted \(capability) to \(account) until \(Console.time(grant?.expiresTimeMilliseconds)) "
                    + "(grant \(grant?.key.storeID ?? "-"))" + (answer.replayed ? ", made before" : "")
            }
        case .revokeGrant:
            let id = try Self.required(form, "grant_id")
            let request = RevokeGrantRequest(grantID: id, reason: reason)
            return Prepared(
                summary: "Revoke support grant \(id) now (RevokeGrant): the access it gives ends."
            ) { console throws(SubctlError) in
                let answer = try await console.call(
                    console.services.ledger, LedgerRPC.revokeGrant.name, request, as: RevokeGrantResponse.self)
                return answer.revoked ? "revoked grant \(id)" : "grant \(id) was revoked already"
            }
        case .extendRenewal:
            let id = try Self.required(form, "original_transaction_id")
            let days = try Self.number(form, "days", 1...90)
            let code = try Self.number(form, "reason_code", 0...3)
            let requestID = form["request_id"].flatMap { $0.isEmpty ? nil : $0 } ?? Self.uuid()
            let operation = AppleOperation.extend(
                ExtendAppleRenewalDateRequest(
                    originalTransactionID: id, environment: try Self.environment(form), days: Int32(days),
                    reasonCode: Int32(code), requestID: requestID, reason: reason))
            return Prepared(
                summary: "Move the App Store renewal date of original transaction \(id) \(days) days later "
                    + "(ExtendAppleRenewalDate, reason code \(code): \(Self.reasonCodes[code]), request id "
                    + "\(requestID)); Apple allows two extensions in 365 days.",
                added: form["request_id"] == nil ? [("request_id", requestID)] : []
            ) { console throws(SubctlError) in
                try await console.run { runner, options throws(SubctlError) in
                    try await runner.run(operation, transport: console.services.verifier, options: options)
                }
            }
        case .refundGoogleOrder:
            let order = try Self.required(form, "order_id")
            let revoke = form["revoke"] == "yes"
            let command = GoogleCommand.refund(
                RefundGoogleOrderRequest(
                    packageName: try Self.required(form, "package"), orderID: order,
                    purchaseToken: try Self.required(form, "token"), revoke: revoke, reason: reason))
            return Prepared(
                summary: "Refund Google Play order \(order) (RefundGoogleOrder)"
                    + (revoke ? " and end the subscription's access now." : "; access stays.")
            ) { console throws(SubctlError) in
                try await console.run { runner, options throws(SubctlError) in
                    try await runner.run(command, transport: console.services.verifier, options: options)
                }
            }
        case .revokeGoogle:
            let refund: GoogleRefund
            switch form["refund"] {
            case "full"?: refund = .full
            case "prorated"?: refund = .prorated
            default: throw SubctlError(.invalidArgument, "refund must be full or prorated")
            }
            let token = try Self.required(form, "token")
            let command = GoogleCommand.revoke(
                RevokeGooglePurchaseRequest(
                    purchaseToken: token, packageName: try Self.required(form, "package"), refund: refund,
                    reason: reason))
            return Prepared(
                summary: "Revoke Google Play subscription \(Self.shortToken(token)) with a "
                    + "\(refund == .full ? "full" : "prorated") refund (RevokeGooglePurchase): its access ends now."
            ) { console throws(SubctlError) in
                try await console.run { runner, options throws(SubctlError) in
                    try await runner.run(command, transport: console.services.verifier, options: options)
                }
            }
        case .consumption:
            let id = try Self.required(form, "transaction_id")
            guard form["consented"] == "yes" else {
                throw SubctlError(
                    .invalidArgument, "the customer's consent is required: nothing is sent to Apple without it")
            }
            let delivery = try Self.required(form, "delivery")
            guard Self.deliveryStatuses.contains(delivery) else {
                throw SubctlError(
                    .invalidArgument, "delivery must be one of \(Self.deliveryStatuses.joined(separator: ", "))")
            }
            let preference = form["refund_preference"] ?? ""
            guard Self.refundPreferences.contains(preference) else {
                throw SubctlError(.invalidArgument, "refund preference must be DECLINE, GRANT_FULL or GRANT_PRORATED")
            }
            let operation = AppleOperation.consumption(
                SendAppleConsumptionInformationRequest(
                    transactionID: id, environment: try Self.environment(form), customerConsented: true,
                    deliveryStatus: delivery, sampleContentProvided: form["sample"] == "yes",
                    refundPreference: preference, reason: reason))
            return Prepared(
                summary: "Send Apple consumption information for transaction \(id) (SendAppleConsumptionInformation): "
                    + "customer consented, delivery \(delivery), "
                    + "\(form["sample"] == "yes" ? "a sample was" : "no sample was") provided, refund preference "
                    + "\(preference.isEmpty ? "none" : preference)."
            ) { console throws(SubctlError) in
                try await console.run { runner, options throws(SubctlError) in
                    try await runner.run(operation, transport: console.services.verifier, options: options)
                }
            }
        case .restore:
            let key = try Self.key(form)
            let account = try Self.required(form, "account")
            let idempotency = form["idempotency_key"].flatMap { $0.isEmpty ? nil : $0 } ?? "console-" + Self.uuid()
            var request = RestorePurchasesRequest(accountID: account, idempotencyKey: idempotency, reason: reason)
            switch key.store {
            case .apple: request.appleTransactionIDs = [key.storeID]
            case .google:
                request.googlePurchases = [
                    GooglePurchaseRef(
                        packageName: try Self.required(form, "package"), productID: try Self.required(form, "product"),
                        purchaseToken: key.storeID)
                ]
            case .promotional: throw SubctlError(.invalidArgument, "a grant is not restored: grant again")
            }
            return Prepared(
                summary: "Restore \(Console.storeName(key.store)) purchase \(key) to account \(account) "
                    + "(RestorePurchases): the verifier reads it from the store again, links it to \(account) (a "
                    + "purchase another account holds moves under the ledger's transfer policy) and acknowledges a "
                    + "Google Play purchase Play still waits for; recorded as imported, under your name and reason.",
                added: form["idempotency_key"] == nil ? [("idempotency_key", idempotency)] : [],
                shownAt: Console.accountPath(account)
            ) { [request] console throws(SubctlError) in
                let answer = try await console.call(
                    console.services.verifier, VerifierRPC.restorePurchases.name, request,
                    as: RestorePurchasesResponse.self)
                let restored = answer.subscriptions.first { $0.key == key }
                return "restored \(key) to \(account): state \(Console.stateName(restored?.state)), "
                    + (restored?.acknowledged == true ? "acknowledged" : "not acknowledged")
            }
        case .redeliverWebhook:
            let endpoint = try Self.required(form, "endpoint")
            let sequence = try Self.number(form, "sequence", 1...Int.max)
            let command = LedgerCommand.replayDeliveries(
                endpoint: endpoint, after: 0, sequence: UInt64(sequence), reason: reason)
            let request = ReplayDeliveriesRequest(
                endpoint: endpoint, afterSequence: 0, sequence: UInt64(sequence), reason: reason)
            return Prepared(
                summary: "Deliver dead-lettered event \(sequence) to endpoint \(endpoint) again (ReplayDeliveries), "
                    + "that event only, under its webhook-id; the endpoint is enabled again if a 410 disabled it."
            ) { console throws(SubctlError) in
                _ = try await console.call(
                    console.services.ledger, command.method, request, as: GetDeliveryStateResponse.self)
                return "event \(sequence) is queued to be delivered to \(endpoint) again (the deliverer takes it up "
                    + "within a minute); the endpoint is enabled"
            }
        }
    }

    /// Apple's extendReasonCode values, by code.
    static let reasonCodes = ["undeclared", "customer satisfaction", "other", "service issue or outage"]
    /// Apple's deliveryStatus values.
    static let deliveryStatuses = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
        "UNDELIVERED_OTHER",
    ]
    /// Apple's refundPreference values; empty for none.
    static let refundPreferences = ["", "DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    /// A new lowercase UUID.
    static func uuid() -> String { UUID().uuidString.lowercased() }

    /// A purchase token as a summary names it: its last 12 characters.
    static func shortToken(_ token: String) -> String { token.count > 16 ? "…" + token.suffix(12) : token }

    private static func required(_ form: FormFields, _ name: String) throws(SubctlError) -> String {
        guard let value = form[name]?.trimmed, !value.isEmpty else {
            throw SubctlError(.invalidArgument, "\(name.replacingOccurrences(of: "_", with: " ")) is required")
        }
        return value
    }

    private static func number(_ form: FormFields, _ name: String, _ range: ClosedRange<Int>) throws(SubctlError)
        -> Int
    {
        let text = try required(form, name)
        guard let value = Int(text), range.contains(value) else {
            throw SubctlError(
                .invalidArgument,
                "\(name.replacingOccurrences(of: "_", with: " ")) must be a whole number "
                    + "\(range.lowerBound)…\(range.upperBound == Int.max ? "" : String(range.upperBound)), "
                    + "got “\(text)”")
        }
        return value
    }

    private static func key(_ form: FormFields) throws(SubctlError) -> SubscriptionKey {
        let text = try required(form, "key")
        do {
            return try SubctlCommand.subscriptionKey(text)
        } catch {
            throw SubctlError(.invalidArgument, "key must be STORE/ENV/STORE_ID, got “\(text)”")
        }
    }

    private static func store(_ form: FormFields) throws(SubctlError) -> Store {
        let text = try required(form, "store")
        guard let store = Store.allCases.first(where: { $0.description == text }), store != .promotional else {
            throw SubctlError(.invalidArgument, "store must be apple or google, got “\(text)”")
        }
        return store
    }

    private static func environment(_ form: FormFields) throws(SubctlError) -> StoreEnvironment {
        let text = try required(form, "environment")
        guard let environment = StoreEnvironment.allCases.first(where: { $0.description == text }) else {
            throw SubctlError(.invalidArgument, "environment must be production or sandbox, got “\(text)”")
        }
        return environment
    }
}
