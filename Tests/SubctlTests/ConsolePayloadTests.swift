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
    static func serve(
        _ fixture: ConsoleFixture, store: Store, raw: String, notificationID: String? = nil, traceID: String? = nil
    ) {
        let key = SubscriptionKey(store: store, environment: .sandbox, storeID: "2000000001")
        fixture.ledger.answer(
            history,
            GetHistoryResponse(events: [
                LifecycleEvent(position: 42, key: key, kind: .renewed, accountID: "alice", rawPayload: "newer"),
                LifecycleEvent(position: 41, key: key, kind: .accountLinked, accountID: "alice"),
                LifecycleEvent(
                    position: 41, key: key, kind: .renewed, verifiedTimeMilliseconds: 1_790_000_000_000,
                    accountID: "alice", notificationID: notificationID, rawPayload: raw, traceID: traceID),
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
        #expect(
            page.text.contains(
                "<h1>Payload</h1><p>renewed of apple/sandbox/2000000001 at -.</p>"
                    + "<p><a href=\"/account/alice\">back to alice</a></p>"))
        // Each JWS under its name, its protected header above its payload; the nested one once.
        #expect(
            page.text.contains(
                "<div id=\"decoded\"><section class=\"raw\" data-label=\"notification\"><h2>notification</h2>"
                    + "<p class=\"jws-header\">Protected header: alg ES256, x5c 3 certificates</p><pre>{\n"
                    + "  &quot;data&quot; : {"))
        #expect(
            page.text.contains(
                "&quot;signedTransactionInfo&quot; : &quot;(a JWS: signedTransactionInfo, below)&quot;"))
        #expect(
            page.text.contains(
                "<section class=\"raw\" data-label=\"signedTransactionInfo\"><h2>signedTransactionInfo</h2>"
                    + "<p class=\"jws-header\">Protected header: alg ES256, x5c 3 certificates</p><pre>{\n"
                    + "  &quot;bundleId&quot; : &quot;com.example.app&quot;,"))
        #expect(page.text.contains("&quot;transactionId&quot; : &quot;2000000001&quot;"))
        #expect(page.text.components(separatedBy: "<section class=\"raw\"").count == 3)
    }

    @Test(
        "an event read from a subscription's history is looked up there; its transaction and renewal info are labelled")
    func byKey() async throws {
        let chain = try AppleSigningChain.generate(now: AppleVerifyRunnerTests.now)
        let fixture = ConsoleFixture(appleAnchors: [chain.root], now: 1_790_000_000_000)
        let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")
        let transaction = try chain.sign(payload: Array(AppleVerifyRunnerTests.transactionJSON.utf8))
        let renewal = try chain.sign(payload: Array(#"{"autoRenewStatus":1,"originalTransactionId":"1"}"#.utf8))
        fixture.ledger.answer(Self.history, GetHistoryResponse(events: []))
        fixture.ledger.answer(
            Self.history, to: GetHistoryRequest(key: key, pageSize: 500),
            GetHistoryResponse(events: [
                LifecycleEvent(
                    position: 11, key: key, kind: .purchased, storeTimeMilliseconds: 1_790_000_000_000,
                    rawTransaction: transaction, rawRenewalInfo: renewal)
            ]))
        let page = await fixture.get(
            "/payload", query: ["account": "alice", "key": "apple/sandbox/2000000001", "position": "11", "index": "0"],
            session: await fixture.login())
        #expect(page.status == 200)
        #expect(page.text.contains("<p>purchased of apple/sandbox/2000000001 at 2026-09-21T14:13:20Z.</p>"))
        #expect(page.text.contains("<p><a href=\"/account/alice\">back to alice</a></p>"))
        #expect(page.text.contains("<p id=\"verification\" class=\"verified\" role=\"status\">Verified now: "))
        for label in ["signedTransactionInfo", "signedRenewalInfo"] {
            #expect(
                page.text.contains(
                    "<section class=\"raw\" data-label=\"\(label)\"><h2>\(label)</h2>"
                        + "<p class=\"jws-header\">Protected header: alg ES256, x5c 3 certificates</p><pre>{"))
        }
        let sent = try #require(try fixture.ledger.last(Self.history, as: GetHistoryRequest.self))
        #expect(sent == GetHistoryRequest(key: key, pageSize: 500))
        let elsewhere = await fixture.get(
            "/payload", query: ["account": "alice", "key": "apple/sandbox/2000000001", "position": "12", "index": "0"],
            session: await fixture.login())
        #expect(elsewhere.status == 404)
        #expect(elsewhere.text.contains("no event 0 at position 12 in apple/sandbox/2000000001&#39;s history"))
        let bad = await fixture.get(
            "/payload", query: ["account": "alice", "key": "nowhere", "position": "11", "index": "0"],
            session: await fixture.login())
        #expect(bad.status == 400)
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

    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"

    /// The push's inbox entry under `trace`, with `push` as its recorded authentication.
    static func inbox(_ fixture: ConsoleFixture, _ push: PushAuthentication?) {
        fixture.ledger.answer(
            "subscriptions.ledger.v1.Ledger/FindTrace",
            FindTraceResponse(inboxEntries: [
                InboxEntry(store: .google, notificationID: "other", notificationType: "4"),
                InboxEntry(store: .google, notificationID: "m-1", notificationType: "4", pushAuthentication: push),
            ]))
    }

    static let push = PushAuthentication(
        iss: "https://accounts.google.com", email: "pubsub@example.iam.gserviceaccount.com",
        aud: "https://verifier.example.com/google/rtdn", kid: "k1", iatMilliseconds: 1_790_000_000_000,
        expMilliseconds: 1_790_003_600_000, checkedTimeMilliseconds: 1_790_000_001_000)

    @Test("a Google Play push is decoded and shown verified as the verifier recorded its token, found by its trace")
    func googlePush() async throws {
        let data = Data(#"{"packageName":"com.example.app","subscriptionNotification":{"notificationType":4}}"#.utf8)
            .base64EncodedString()
        let raw = #"{"message":{"data":"\#(data)","messageId":"m-1"},"subscription":"s"}"#
        let fixture = ConsoleFixture()
        Self.serve(fixture, store: .google, raw: raw, notificationID: "m-1", traceID: Self.trace)
        Self.inbox(fixture, Self.push)
        let page = await fixture.get("/payload", query: Self.query, session: await fixture.login())
        #expect(page.status == 200)
        #expect(
            page.text.contains(
                "<p id=\"verification\" class=\"verified\" role=\"status\">Verified on arrival, as recorded: the push "
                    + "m-1 carried a Pub/Sub token of pubsub@example.iam.gserviceaccount.com, issued by "
                    + "https://accounts.google.com for https://verifier.example.com/google/rtdn, signed with Google&#39;s "
                    + "key k1, valid 2026-09-21T14:13:20Z to 2026-09-21T15:13:20Z, checked by the verifier at "
                    + "2026-09-21T14:13:21Z.</p>"), "\(page.text)")
        #expect(
            try fixture.ledger.last("subscriptions.ledger.v1.Ledger/FindTrace", as: FindTraceRequest.self)?.traceID
                == Self.trace)
        #expect(page.text.contains("&quot;notificationType&quot; : 4"))
        #expect(page.text.contains("&quot;messageId&quot; : &quot;m-1&quot;"))
        let missing = await fixture.get(
            "/payload", query: ["account": "alice", "position": "41", "index": "2"], session: await fixture.login())
        #expect(missing.status == 404)
    }

    @Test(
        "a Google Play payload fails when its recorded authentication is missing or wrong, and one read from Play's API says so"
    )
    func googleNotVerified() async throws {
        var foreign = Self.push
        foreign.iss = "https://evil.example"
        var late = Self.push
        late.checkedTimeMilliseconds = 1_790_003_700_000
        for (push, text) in [
            (nil, "Not verified: the inbox entry m-1 records no push authentication."),
            (
                foreign,
                "Verification failed: the recorded push authentication has issuer &quot;https://evil.example&quot; is not Google&#39;s."
            ),
            (
                late,
                "Verification failed: the recorded push authentication has checked at 2026-09-21T15:15:00Z, outside the token&#39;s validity."
            ),
        ] as [(PushAuthentication?, String)] {
            let fixture = ConsoleFixture()
            Self.serve(fixture, store: .google, raw: "{}", notificationID: "m-1", traceID: Self.trace)
            Self.inbox(fixture, push)
            let page = await fixture.get("/payload", query: Self.query, session: await fixture.login())
            #expect(
                page.text.contains("<p id=\"verification\" class=\"failed\" role=\"status\">\(text)</p>"),
                "\(page.text)")
        }
        let fixture = ConsoleFixture()
        Self.serve(fixture, store: .google, raw: "{}")
        let page = await fixture.get("/payload", query: Self.query, session: await fixture.login())
        #expect(
            page.text.contains(
                "class=\"failed\" role=\"status\">Not a push: read from the Play Developer API by the verifier over TLS at "
                    + "2026-09-21T14:13:20Z; Play signs no answer that could be verified again.</p>"))
        #expect(fixture.calls.filter { $0.hasSuffix("FindTrace") }.isEmpty)
    }
}
