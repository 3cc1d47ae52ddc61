import AppStore
import Crypto
import Foundation
import HTTP
import Model
import Testing
import Wire

@testable import SubctlKit

@Suite("subctl console: raw payloads")
struct ConsolePayloadTests {
    static let history = "subscriptions.ledger.v1.Ledger/GetHistory"
    static let query = ["account": "alice", "position": "41", "index": "1"]

    /// The account's history: two events at position 41, the second with `raw`.
    static func serve(_ fixture: ConsoleFixture, store: Store, raw: String) {
        let key = SubscriptionKey(store: store, environment: .sandbox, storeID: "2000000001")
        fixture.ledger.answer(
            history,
            GetHistoryResponse(events: [
                LifecycleEvent(position: 42, key: key, kind: .renewed, accountID: "alice", rawPayload: "newer"),
                LifecycleEvent(position: 41, key: key, kind: .accountLinked, accountID: "alice"),
                LifecycleEvent(position: 41, key: key, kind: .renewed, accountID: "alice", rawPayload: raw),
            ]))
    }

    static func notification(_ chain: AppleSigningChain) throws -> String {
        let transaction = try chain.sign(payload: Array(AppleVerifyRunnerTests.transactionJSON.utf8))
        let json =
            #"{"data":{"appAppleId":12345,"bundleId":"com.example.app","environment":"Sandbox","#
            + #""signedTransactionInfo":"\#(transaction)"},"notificationType":"DID_RENEW","#
            + #""notificationUUID":"0b9ef2a5-5f5e-4a83-8b3b-0c6fa58c1f2e","signedDate":1790000000000,"version":"2.0"}"#
        return try chain.sign(payload: Array(json.utf8))
    }

    @Test("an App Store notification is decoded, the transaction inside it too, and verified again against the root")
    func appleVerified() async throws {
        let chain = try AppleSigningChain.generate(now: AppleVerifyRunnerTests.now)
        let fixture = ConsoleFixture(appleAnchors: [chain.root], now: 1_790_000_000_000)
        Self.serve(fixture, store: .apple, raw: try Self.notification(chain))
        let session = await fixture.login()
        let page = await fixture.get("/payload", query: Self.query, session: session)
        #expect(page.status == 200)
        #expect(
            page.text.contains(
                "<p id=\"verification\" class=\"verified\" role=\"status\">Verified now: notification, "
                    + "data.signedTransactionInfo signed (ES256) by a certificate that chains to a configured App "
                    + "Store root.</p>"))
        #expect(page.text.contains("<pre id=\"decoded\">{\n  &quot;data&quot; : {"))
        #expect(page.text.contains("&quot;transactionId&quot; : &quot;2000000001&quot;"))
    }

    @Test("a payload signed under another root fails verification, and without roots nothing is verified")
    func appleFailed() async throws {
        let chain = try AppleSigningChain.generate(now: AppleVerifyRunnerTests.now)
        let other = try AppleSigningChain.generate(now: AppleVerifyRunnerTests.now)
        let fixture = ConsoleFixture(appleAnchors: [other.root], now: 1_790_000_000_000)
        Self.serve(fixture, store: .apple, raw: try Self.notification(chain))
        let session = await fixture.login()
        let page = await fixture.get("/payload", query: Self.query, session: session)
        #expect(page.text.contains("<p id=\"verification\" class=\"failed\" role=\"status\">Verification failed: "))
        let bare = ConsoleFixture(now: 1_790_000_000_000)
        Self.serve(bare, store: .apple, raw: try Self.notification(chain))
        let unverified = await bare.get("/payload", query: Self.query, session: await bare.login())
        #expect(
            unverified.text.contains(
                "<p id=\"verification\" class=\"failed\" role=\"status\">Not verified: no App Store root was given "
                    + "(subctl console --apple-root PEM).</p>"))
    }

    @Test("a Google Play push has its data decoded; the page says it is not verified here")
    func googlePush() async throws {
        let data = Data(#"{"packageName":"com.example.app","subscriptionNotification":{"notificationType":4}}"#.utf8)
            .base64EncodedString()
        let fixture = ConsoleFixture()
        Self.serve(
            fixture, store: .google, raw: #"{"message":{"data":"\#(data)","messageId":"m-1"},"subscription":"s"}"#)
        let page = await fixture.get("/payload", query: Self.query, session: await fixture.login())
        #expect(page.status == 200)
        #expect(page.text.contains("<p id=\"verification\" class=\"failed\" role=\"status\">Not verified here: "))
        #expect(page.text.contains("&quot;notificationType&quot; : 4"))
        #expect(page.text.contains("&quot;messageId&quot; : &quot;m-1&quot;"))
        let missing = await fixture.get(
            "/payload", query: ["account": "alice", "position": "41", "index": "2"], session: await fixture.login())
        #expect(missing.status == 404)
    }
}
