import Foundation
import Model
import Observability
import RPC
import Testing
import Wire

@testable import LedgerService

@Suite("Ledger: the read-only role and what a push's authentication records")
struct LedgerReadOnlyTests {
    static let engines = LedgerEngine.available
    static let trace = TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")!
    static let authentication = PushAuthentication(
        iss: "https://accounts.google.com", email: "play-push@example.iam.gserviceaccount.com",
        aud: "https://verifier.example.com/google/notifications", kid: "f5f4bf46e52b31d9b6249f7309ad0338400680cd",
        iatMilliseconds: 1_789_999_990_000, expMilliseconds: 1_790_003_590_000,
        checkedTimeMilliseconds: 1_790_000_000_000)

    static func googleEntry(_ authentication: PushAuthentication?) -> InboxEntry {
        InboxEntry(
            store: .google, environment: .production, notificationID: "pubsub-1",
            notificationType: "SUBSCRIPTION_RENEWED", signedTimeMilliseconds: 1_789_999_999_000,
            key: SubscriptionKey(store: .google, environment: .production, storeID: "token-1"),
            rawPayload: "{\"version\":\"1.0\"}", pushAuthentication: authentication)
    }

    @Test(
        "a Google push's checked authentication is stored with its inbox entry and answered by ListInbox, FindTrace and a duplicate's record",
        arguments: engines)
    func pushAuthenticationKept(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            let recorded = try await TraceContext.$current.withValue(Self.trace) {
                try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(entry: Self.googleEntry(Self.authentication)))
            }
            #expect(recorded.entry?.pushAuthentication == Self.authentication)
            let listed = try await ledger.inbox.listInbox(ListInboxRequest())
            #expect(listed.entries.map(\.pushAuthentication) == [Self.authentication])
            let traced = try await ledger.inbox.findTrace(FindTraceRequest(traceID: Self.trace.traceID))
            #expect(traced.inboxEntries.map(\.pushAuthentication) == [Self.authentication])
            let again = try await ledger.inbox.recordNotification(
                RecordNotificationRequest(entry: Self.googleEntry(nil)))
            #expect(again.duplicate)
            #expect(again.entry?.pushAuthentication == Self.authentication)
        }
    }

    @Test("a push authentication past its bounds is refused, naming the field")
    func pushAuthenticationBounded() async throws {
        try await LedgerEngine.sqlite.withLedger { ledger, _ in
            var authentication = Self.authentication
            authentication.aud = String(repeating: "a", count: 1025)
            await #expect(
                throws: LedgerError.invalidArgument(
                    "entry.push_authentication.aud is 1025 bytes; at most 1024 are allowed")
            ) {
                _ = try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(entry: Self.googleEntry(authentication)))
            }
        }
    }

    @Test("every method the ledger marks @read has a redacting path for a read-only caller, and no other")
    func readMethodsRedacted() async throws {
        try await LedgerEngine.sqlite.withLedger { ledger, _ in
            let router = RPCRouter()
            LedgerMethods.register(on: router, ledger: ledger)
            // Health is the host's (ServiceHost registers it, by role).
            let expected = Set(LedgerRPC.readMethods.map(\.name)).subtracting([LedgerRPC.health.name])
            #expect(Set(router.readOnlyMethodNames) == expected)
        }
    }
}
