import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// The read-only role (`RPC_READ_ONLY`) over mutual TLS: `support` has it, `operator` has not.
@Suite("The read-only role")
struct ReadOnlyRoleTests {
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000123456789")
    static let event = LifecycleEvent(
        position: 3, key: key, kind: .renewed, storeTimeMilliseconds: 1_700_000_000_000, accountID: "account-1",
        storeType: "DID_RENEW", state: .active, rawPayload: "{\"signedPayload\":\"eyJ.x.y\"}",
        rawTransaction: "eyJ.transaction.sig", rawRenewalInfo: "eyJ.renewal.sig")
    static let period = Period(
        periodID: "2000000123450001", productID: "pro.monthly", startMilliseconds: 1_000, endMilliseconds: 2_000,
        raw: "eyJ.period.sig")
    static let subscription = Subscription(
        key: key, accountID: "account-1", productID: "pro.monthly", state: .active, expiresTimeMilliseconds: 2_000,
        bundleOrPackage: "com.example.app", latestOrderID: "2000000123450001", periods: [period])
    static let found = FindSubscriptionsResponse(
        matches: [SubscriptionMatch(key: key, accountID: "account-1", matched: .appleOriginalTransactionID)])
    static let inbox = ListInboxResponse(
        entries: [
            InboxEntry(
                store: .apple, environment: .production, notificationID: "n-1", notificationType: "DID_RENEW", key: key,
                rawPayload: "{\"signedPayload\":\"eyJ.x.y\"}")
        ])

    /// A server with TLS whose certificates name `operator` and `support`, `support` read-only,
    /// with ledger methods registered each way a service registers them, and a write.
    struct Fixture {
        let folder: String
        let pki: TestPKIFiles
        let server: TestServer
        let granted = Recorder<Int>()

        init() throws {
            folder = NSTemporaryDirectory() + "rpc-roles-\(UUID().uuidString)"
            let now = Date()
            let year = now.addingTimeInterval(365 * 86400)
            let pki = try TestPKI.write(
                to: folder, caName: "Test Roles CA",
                identities: [
                    ("server", now.addingTimeInterval(-60), year), ("operator", now.addingTimeInterval(-60), year),
                    ("support", now.addingTimeInterval(-60), year),
                ])
            self.pki = pki
            let granted = self.granted
            server = try TestServer { configuration in
                configuration.tls = TLSConfiguration(
                    certificatePath: pki["server"]!.certificatePath, keyPath: pki["server"]!.keyPath,
                    caPath: pki.caCertificatePath)
                configuration.readOnlyIdentities = ["support"]
            } extra: { router in
                router.unary(LedgerRPC.getHistory) { (_, _: GetHistoryRequest) in
                    GetHistoryResponse(events: [ReadOnlyRoleTests.event], nextPageToken: "41")
                }
                router.deferred(LedgerRPC.getSubscription) { (_, _: GetSubscriptionRequest, respond) in
                    respond(
                        .success(
                            GetSubscriptionResponse(
                                subscription: ReadOnlyRoleTests.subscription, periods: [ReadOnlyRoleTests.period])))
                }
                // Raw, by the typed descriptor: answered on the loop, or handed off.
                router.register(
                    LedgerRPC.findSubscriptions,
                    .inline { _, output in ReadOnlyRoleTests.found.serialize(appendingTo: &output) })
                router.register(
                    LedgerRPC.listInbox,
                    .inline { _, _ in
                        throw RPCHandOff { _, responder in responder.succeed(ReadOnlyRoleTests.inbox.serialized()) }
                    })
                router.inline(
                    LedgerRPC.health.name,
                    byRole: { (_: HealthRequest, readOnly) in
                        HealthResponse(status: .serving, service: "ledger", callerReadOnly: readOnly)
                    })
                router.unary(LedgerRPC.grantEntitlement) { (_, _: GrantEntitlementRequest) in
                    granted.add(1)
                    return GrantEntitlementResponse(replayed: false, position: 9)
                }
                // @read, but registered without its response type: nothing could redact it.
                router.register(LedgerRPC.getCursor.name, .unary { _, _ in Cursor(name: "c", value: 1).serialized() })
            }
        }

        func client(_ name: String) throws -> RPCClient {
            var configuration = RPCClientConfiguration(
                tls: TLSConfiguration(
                    certificatePath: pki[name]!.certificatePath, keyPath: pki[name]!.keyPath,
                    caPath: pki.caCertificatePath))
            configuration.initialBackoff = .milliseconds(1)
            return try RPCClient(endpoints: [server.endpoint], configuration: configuration)
        }

        func finish() async {
            await server.server.shutdown()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// `RPCServer.callBlocking` as the HTTP gateway calls it, from a thread that may block (never
    /// the cooperative pool's).
    static func callBlocking(
        _ server: RPCServer, _ method: String, payload: [UInt8], timeoutMilliseconds: UInt64, caller: RPCCaller
    ) async -> Result<[UInt8], RPCError> {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: server.callBlocking(
                        method, payload: payload, timeoutMilliseconds: timeoutMilliseconds, caller: caller))
            }
        }
    }

    static func refusal(_ identity: String, _ method: some RPCMethod) -> RPCError {
        RPCError(
            .permissionDenied, "\(identity) has the read-only role (RPC_READ_ONLY) and may not call \(method.name)")
    }

    @Test("support is refused a write, naming itself, the role and the method; operator makes it")
    func writeRefused() async throws {
        let fixture = try Fixture()
        let support = try fixture.client("support")
        await #expect(throws: Self.refusal("support", LedgerRPC.grantEntitlement)) {
            _ = try await support.call(LedgerRPC.grantEntitlement, GrantEntitlementRequest(idempotencyKey: "k"))
        }
        #expect(fixture.granted.all.isEmpty)
        let answer = try await fixture.client("operator").call(
            LedgerRPC.grantEntitlement, GrantEntitlementRequest(idempotencyKey: "k"))
        #expect(answer == GrantEntitlementResponse(replayed: false, position: 9))
        // A method that changes nothing but whose answer nothing could redact is refused too.
        await #expect(throws: Self.refusal("support", LedgerRPC.getCursor)) {
            _ = try await support.call(LedgerRPC.getCursor, GetCursorRequest(name: "c"))
        }
        await fixture.finish()
    }

    @Test("support's answers are redacted field by field, whichever way the method is registered; operator's are not")
    func answersRedacted() async throws {
        let fixture = try Fixture()
        let support = try fixture.client("support")
        let operator_ = try fixture.client("operator")

        let history = try await support.call(LedgerRPC.getHistory, GetHistoryRequest(accountID: "account-1"))
        var event = Self.event
        event.key.storeID = "…6789"
        event.rawPayload = nil
        event.rawTransaction = nil
        event.rawRenewalInfo = nil
        #expect(history == GetHistoryResponse(events: [event], nextPageToken: "41"))
        #expect(history.events[0].accountID == "account-1")
        #expect(
            try await operator_.call(LedgerRPC.getHistory, GetHistoryRequest(accountID: "account-1"))
                == GetHistoryResponse(events: [Self.event], nextPageToken: "41"))

        let subscription = try await support.call(LedgerRPC.getSubscription, GetSubscriptionRequest(key: Self.key))
        var period = Self.period
        period.periodID = "…0001"
        period.raw = nil
        var expected = Self.subscription
        expected.key.storeID = "…6789"
        expected.latestOrderID = "…0001"
        expected.periods = [period]
        #expect(subscription == GetSubscriptionResponse(subscription: expected, periods: [period]))
        #expect(
            try await operator_.call(LedgerRPC.getSubscription, GetSubscriptionRequest(key: Self.key))
                == GetSubscriptionResponse(subscription: Self.subscription, periods: [Self.period]))

        let found = try await support.call(LedgerRPC.findSubscriptions, FindSubscriptionsRequest(value: "x"))
        #expect(
            found
                == FindSubscriptionsResponse(
                    matches: [
                        SubscriptionMatch(
                            key: SubscriptionKey(store: .apple, environment: .production, storeID: "…6789"),
                            accountID: "account-1", matched: .appleOriginalTransactionID)
                    ]))
        #expect(
            try await operator_.call(LedgerRPC.findSubscriptions, FindSubscriptionsRequest(value: "x")) == Self.found)

        let inbox = try await support.call(LedgerRPC.listInbox, ListInboxRequest())
        #expect(inbox.entries.map(\.key?.storeID) == ["…6789"])
        #expect(inbox.entries.map(\.rawPayload) == [""])
        #expect(try await operator_.call(LedgerRPC.listInbox, ListInboxRequest()) == Self.inbox)
        await fixture.finish()
    }

    @Test("Health tells each caller its role")
    func health() async throws {
        let fixture = try Fixture()
        #expect(try await fixture.client("support").call(LedgerRPC.health, HealthRequest()).callerReadOnly)
        #expect(try await !fixture.client("operator").call(LedgerRPC.health, HealthRequest()).callerReadOnly)
        await fixture.finish()
    }

    @Test("a caller of the HTTP gateway's path (an API key's identity) has the same role as a certificate's")
    func gatewayCaller() async throws {
        let fixture = try Fixture()
        let server = fixture.server.server
        let support = RPCCaller(identities: ["support"], peer: "127.0.0.1")
        let refused = await Self.callBlocking(
            server,
            LedgerRPC.grantEntitlement.name, payload: GrantEntitlementRequest(idempotencyKey: "k").serialized(),
            timeoutMilliseconds: 0, caller: support)
        #expect(throws: Self.refusal("support", LedgerRPC.grantEntitlement)) { try refused.get() }
        let history = try GetHistoryResponse(
            serialized: await Self.callBlocking(
                server,
                LedgerRPC.getHistory.name, payload: GetHistoryRequest(accountID: "a").serialized(),
                timeoutMilliseconds: 0, caller: support
            ).get())
        #expect(history == GetHistoryResponse(events: [Self.event.redacted()], nextPageToken: "41"))
        let inbox = try ListInboxResponse(
            serialized: await Self.callBlocking(
                server,
                LedgerRPC.listInbox.name, payload: [], timeoutMilliseconds: 0, caller: support
            ).get())
        #expect(inbox == Self.inbox.redacted())
        let operatorHistory = try GetHistoryResponse(
            serialized: await Self.callBlocking(
                server,
                LedgerRPC.getHistory.name, payload: [], timeoutMilliseconds: 0,
                caller: RPCCaller(identities: ["operator"], peer: "127.0.0.1")
            ).get())
        #expect(operatorHistory.events == [Self.event])
        // In process, as the gateway's callers are held.
        let transport = InProcessTransport(server: server, caller: support)
        #expect(try await transport.call(LedgerRPC.health, HealthRequest(), timeout: nil).callerReadOnly)
        await #expect(throws: Self.refusal("support", LedgerRPC.grantEntitlement)) {
            _ = try await transport.call(LedgerRPC.grantEntitlement, GrantEntitlementRequest(), timeout: nil)
        }
        await fixture.finish()
    }

    @Test("the read-only methods are the @read ones registered with a response type")
    func readOnlyMethodNames() {
        let router = RPCRouter()
        router.unary(LedgerRPC.getHistory) { (_, _: GetHistoryRequest) in GetHistoryResponse() }
        router.unary(LedgerRPC.grantEntitlement) { (_, _: GrantEntitlementRequest) in GrantEntitlementResponse() }
        router.register(LedgerRPC.findTrace, .unary { _, _ in [] })
        router.register(LedgerRPC.getCursor.name, .unary { _, _ in [] })
        #expect(router.readOnlyMethodNames == [LedgerRPC.getHistory.name, LedgerRPC.findTrace.name])
    }
}
