import Model
import Testing
import Wire

@Suite("Redaction for the read-only role")
struct RedactionTests {
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000123456789")

    @Test(
        "a store id keeps its last 4 characters after …; 4 characters or fewer become …; empty stays empty",
        arguments: [
            ("2000000123456789", "…6789"), ("GPA.3345-1234-5678-90123..2", "…3..2"),
            ("12345", "…2345"), ("1234", "…"), ("1", "…"), ("", ""),
        ])
    func storeID(value: String, shown: String) {
        #expect(ProtoRedaction.storeID(value) == shown)
    }

    @Test(
        "a subscription keeps its account, product, times and state; its store ids are cut and its periods' raw data cleared"
    )
    func subscription() {
        let subscription = Subscription(
            key: Self.key, accountID: "account-1", productID: "pro.monthly", state: .active,
            expiresTimeMilliseconds: 2_000, replacesStoreID: "2000000000000001", replacedByStoreID: "abc",
            storeAccountRef: "6a0b2c8e-0000-4000-8000-000000000001", bundleOrPackage: "com.example.app",
            latestOrderID: "2000000123450000",
            periods: [
                Period(
                    periodID: "2000000123456789", productID: "pro.monthly", startMilliseconds: 1_000,
                    endMilliseconds: 2_000, raw: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
                Period(periodID: "2000000123450000", productID: "pro.monthly", startMilliseconds: 2_000),
            ])
        let redacted = subscription.redacted()
        var expected = subscription
        expected.key.storeID = "…6789"
        expected.replacesStoreID = "…0001"
        expected.replacedByStoreID = "…"
        expected.latestOrderID = "…0000"
        expected.periods[0].periodID = "…6789"
        expected.periods[0].raw = nil
        expected.periods[1].periodID = "…0000"
        #expect(redacted == expected)
        #expect(redacted.accountID == "account-1")
        #expect(redacted.storeAccountRef == subscription.storeAccountRef)
    }

    @Test("a lifecycle event loses its raw payload, transaction and renewal info, and its key's store id is cut")
    func lifecycleEvent() {
        let event = LifecycleEvent(
            position: 7, key: Self.key, kind: .renewed, storeTimeMilliseconds: 1_500, accountID: "account-1",
            storeType: "DID_RENEW", notificationID: "0a0b", state: .active, rawPayload: "{\"signedPayload\":\"x\"}",
            detail: "renewed", rawTransaction: "jws.transaction", rawRenewalInfo: "jws.renewal", actor: "verifier",
            traceID: "4bf92f3577b34da6a3ce929d0e0e4736")
        var expected = event
        expected.key.storeID = "…6789"
        expected.rawPayload = nil
        expected.rawTransaction = nil
        expected.rawRenewalInfo = nil
        #expect(event.redacted() == expected)
    }

    @Test("messages that hold redacted ones redact them, however deep; one with nothing to redact is unchanged")
    func nested() {
        let entry = InboxEntry(
            store: .google, environment: .production, notificationID: "m-1", notificationType: "SUBSCRIPTION_RENEWED",
            key: SubscriptionKey(store: .google, environment: .production, storeID: "token-abcdefgh"),
            rawPayload: "{\"version\":\"1.0\"}",
            pushAuthentication: PushAuthentication(
                iss: "https://accounts.google.com", email: "push@example.iam.gserviceaccount.com",
                aud: "https://verifier.example.com/google/notifications", kid: "key-1", iatMilliseconds: 1_000,
                expMilliseconds: 3_601_000, checkedTimeMilliseconds: 2_000))
        let response = ListInboxResponse(entries: [entry], nextPageToken: "token")
        var expected = entry
        expected.key?.storeID = "…efgh"
        expected.rawPayload = ""
        #expect(response.redacted() == ListInboxResponse(entries: [expected], nextPageToken: "token"))
        let found = FindResponse(
            takenAs: .appleOrderID, accountIDs: ["account-1"], unrecordedOriginalTransactionIDs: ["2000000999990001"])
        #expect(found.redacted().unrecordedOriginalTransactionIDs == ["…0001"])
        #expect(found.redacted().accountIDs == ["account-1"])
        let health = HealthResponse(status: .serving, service: "ledger", connections: 3)
        #expect(health.redacted() == health)
        #expect(
            ListSubscriptionsResponse(nextPageToken: "AAECAw").redacted() == ListSubscriptionsResponse(),
            "a page token that holds a store id is cleared")
    }

    @Test("the methods marked @read are those that change nothing, and the schema lists them by full name")
    func readMethods() {
        #expect(
            LedgerRPC.readMethods.map(\.name)
                == [
                    "Health", "GetSubscription", "GetAccount", "GetHistory", "ListInbox", "ListSubscriptions",
                    "GetCursor",
                    "GetFeedPosition", "GetEventState", "GetDeliveryState", "ListDeadLetters", "FindSubscriptions",
                    "FindTrace",
                ].map { "subscriptions.ledger.v1.Ledger/\($0)" })
        #expect(
            EntitlementRPC.readMethods.map(\.name)
                == [
                    "Health", "CheckAccess", "CheckAccessBatch", "ListEntitlements", "GetActiveSubscriptions",
                    "HasActiveSubscriptions", "GetAccessTimeline",
                ].map { "subscriptions.entitlement.v1.Entitlement/\($0)" })
        #expect(
            VerifierRPC.readMethods.map(\.name)
                == ["Health", "Find"].map { "subscriptions.verifier.v1.Verifier/\($0)" })
        let all = LedgerRPC.readMethods + EntitlementRPC.readMethods + VerifierRPC.readMethods
        #expect(ProtoSchema.readMethodNames == Set(all.map(\.name)))
        #expect(ProtoSchema.readMethodNames.allSatisfy { !$0.hasSuffix("/Snapshot") && !$0.hasSuffix("/WatchChanges") })
    }
}
