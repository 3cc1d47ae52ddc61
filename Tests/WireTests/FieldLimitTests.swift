import Foundation
import Model
import Testing
import Wire

/// The bounds `proto/` states for request fields reach the services' checks and the OpenAPI
/// documents from the one `limit:` line.
@Suite("Field limits")
struct FieldLimitTests {
    /// Every message with a `limit:` line, by full name, with its generated constants.
    static let limited: [(String, [FieldLimit])] = [
        (VerifyApplePurchaseRequest.protoName, VerifyApplePurchaseRequest.Limits.all),
        (VerifyGooglePurchaseRequest.protoName, VerifyGooglePurchaseRequest.Limits.all),
        (RestorePurchasesRequest.protoName, RestorePurchasesRequest.Limits.all),
        (GooglePurchaseRef.protoName, GooglePurchaseRef.Limits.all),
        (RevokeGooglePurchaseRequest.protoName, RevokeGooglePurchaseRequest.Limits.all),
        (RefundGoogleOrderRequest.protoName, RefundGoogleOrderRequest.Limits.all),
        (DeferGoogleRenewalRequest.protoName, DeferGoogleRenewalRequest.Limits.all),
        (CancelGoogleSubscriptionRequest.protoName, CancelGoogleSubscriptionRequest.Limits.all),
        (ExtendAppleRenewalDateRequest.protoName, ExtendAppleRenewalDateRequest.Limits.all),
        (SetAppleAppAccountTokenRequest.protoName, SetAppleAppAccountTokenRequest.Limits.all),
        (GetAppleRefundHistoryRequest.protoName, GetAppleRefundHistoryRequest.Limits.all),
        (MassExtendAppleRenewalDateRequest.protoName, MassExtendAppleRenewalDateRequest.Limits.all),
        (GetAppleMassExtensionStatusRequest.protoName, GetAppleMassExtensionStatusRequest.Limits.all),
        (SendAppleConsumptionInformationRequest.protoName, SendAppleConsumptionInformationRequest.Limits.all),
        (FindRequest.protoName, FindRequest.Limits.all),
        (FindSubscriptionsRequest.protoName, FindSubscriptionsRequest.Limits.all),
        (FindTraceRequest.protoName, FindTraceRequest.Limits.all),
        (InboxEntry.protoName, InboxEntry.Limits.all),
        (PushAuthentication.protoName, PushAuthentication.Limits.all),
        (RecordVerifiedStateRequest.protoName, RecordVerifiedStateRequest.Limits.all),
        (LinkAccountRequest.protoName, LinkAccountRequest.Limits.all),
        (GrantEntitlementRequest.protoName, GrantEntitlementRequest.Limits.all),
        (RevokeGrantRequest.protoName, RevokeGrantRequest.Limits.all),
        (MergeAccountsRequest.protoName, MergeAccountsRequest.Limits.all),
        (DeleteAccountRequest.protoName, DeleteAccountRequest.Limits.all),
        (LogTestEventRequest.protoName, LogTestEventRequest.Limits.all),
        (GetAccountRequest.protoName, GetAccountRequest.Limits.all),
        (GetHistoryRequest.protoName, GetHistoryRequest.Limits.all),
        (MarkInboxRequest.protoName, MarkInboxRequest.Limits.all),
        (ReplayInboxRequest.protoName, ReplayInboxRequest.Limits.all),
        (ReplayDeliveriesRequest.protoName, ReplayDeliveriesRequest.Limits.all),
        (RefreshSubscriptionRequest.protoName, RefreshSubscriptionRequest.Limits.all),
        (Period.protoName, Period.Limits.all),
        (SubscriptionKey.protoName, SubscriptionKey.Limits.all),
        (Subscription.protoName, Subscription.Limits.all),
        (LifecycleEvent.protoName, LifecycleEvent.Limits.all),
        (Event.protoName, Event.Limits.all),
    ]

    /// The bounds a document's schema gives each field: `message.jsonName` → the keywords set.
    static func documentedBounds() throws -> [String: [String: Int]] {
        var found: [String: [String: Int]] = [:]
        for (service, text) in OpenAPIDocuments.byService {
            let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let components = try #require(document["components"] as? [String: Any], "\(service)")
            let schemas = try #require(components["schemas"] as? [String: Any], "\(service)")
            for (message, schema) in schemas {
                let properties = (schema as? [String: Any])?["properties"] as? [String: Any] ?? [:]
                for (name, property) in properties {
                    guard var property = property as? [String: Any] else { continue }
                    var bounds: [String: Int] = [:]
                    for keyword in ["minItems", "maxItems"] { bounds[keyword] = property[keyword] as? Int }
                    if let items = property["items"] as? [String: Any] { property = items }
                    for keyword in ["minLength", "maxLength"] { bounds[keyword] = property[keyword] as? Int }
                    guard !bounds.isEmpty else { continue }
                    let key = "\(message).\(name)"
                    if let other = found[key] { #expect(other == bounds, "\(key) differs between documents") }
                    found[key] = bounds
                }
            }
        }
        return found
    }

    /// `idempotency_key` → `idempotencyKey`, as proto3 JSON names it.
    static func jsonName(_ field: String) -> String {
        let parts = field.split(separator: "_")
        return parts.prefix(1).joined() + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    @Test(
        "every generated limit is its field's minLength/maxLength (minItems/maxItems) in the OpenAPI documents, and no other field has one"
    )
    func documentsMatchConstants() throws {
        var expected: [String: [String: Int]] = [:]
        for (message, limits) in Self.limited {
            for limit in limits {
                let key = "\(message).\(Self.jsonName(limit.field))"
                let (low, high) = limit.unit == .items ? ("minItems", "maxItems") : ("minLength", "maxLength")
                expected[key, default: [:]][high] = limit.maximum
                if limit.minimum > 0 { expected[key, default: [:]][low] = limit.minimum }
            }
        }
        let documented = try Self.documentedBounds()
        // The verifier's and the ledger's documents describe the requests whose limits the
        // services check; the messages no method reaches are in no document.
        for (key, bounds) in documented { #expect(expected[key] == bounds, "\(key)") }
        let reached = Set(documented.keys)
        for key in expected.keys where !reached.contains(key) {
            Issue.record("\(key) has a limit but no document states it")
        }
    }

    @Test("the limits the services share: keys 1..128 bytes, account ids 1..256, capabilities 1..64, reasons 0..1024")
    func sharedLimits() {
        for limit in [
            VerifyApplePurchaseRequest.Limits.idempotencyKey, VerifyGooglePurchaseRequest.Limits.idempotencyKey,
            RestorePurchasesRequest.Limits.idempotencyKey, RecordVerifiedStateRequest.Limits.idempotencyKey,
            LinkAccountRequest.Limits.idempotencyKey, GrantEntitlementRequest.Limits.idempotencyKey,
            MergeAccountsRequest.Limits.idempotencyKey,
        ] {
            #expect(limit == FieldLimit("idempotency_key", 1...128, .bytes))
        }
        for limit in [
            VerifyApplePurchaseRequest.Limits.accountID, VerifyGooglePurchaseRequest.Limits.accountID,
            RestorePurchasesRequest.Limits.accountID, LinkAccountRequest.Limits.accountID,
            GrantEntitlementRequest.Limits.accountID, DeleteAccountRequest.Limits.accountID,
            GetAccountRequest.Limits.accountID,
        ] {
            #expect(limit == FieldLimit("account_id", 1...256, .bytes))
        }
        #expect(GrantEntitlementRequest.Limits.capability == FieldLimit("capability", 1...64, .bytes))
        #expect(GrantEntitlementRequest.Limits.reason == FieldLimit("reason", 0...1024, .bytes))
        #expect(RevokeGrantRequest.Limits.reason == FieldLimit("reason", 0...1024, .bytes))
        #expect(RestorePurchasesRequest.Limits.googlePurchasesCount == FieldLimit("google_purchases", 0...100, .items))
    }

    @Test("a limit says its field and bounds, and counts UTF-8 bytes")
    func wording() {
        let key = FieldLimit("idempotency_key", 1...128, .bytes)
        #expect(key.requirement == "idempotency_key must be 1 to 128 bytes")
        #expect(FieldLimit("reason", 0...1024, .bytes).requirement == "reason must be at most 1024 bytes")
        #expect(key.admits(String(repeating: "k", count: 128)) && !key.admits(String(repeating: "k", count: 129)))
        #expect(
            !key.admits("") && key.admits(String(repeating: "é", count: 64))
                && !key.admits(String(repeating: "é", count: 65)))
        #expect(FieldLimit("google_purchases", 0...100, .items).description == "at most 100 items")
    }
}
