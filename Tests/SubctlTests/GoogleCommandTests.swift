import Config
import Model
import Sockets
import SubctlKit
import Synchronization
import Testing
import Wire

@Suite("subctl google: parsing and running")
struct GoogleCommandTests {
    var defaults: CallOptions { CallOptions(address: HostPort(host: "127.0.0.1", port: 7001), timeout: .seconds(5)) }
    static let addr = ["--addr", "127.0.0.1:7001"]

    @Test("revoke, refund, defer and cancel carry the verifier's request as it is sent")
    func parsing() throws {
        #expect(
            try SubctlCommand.parse(
                ["google", "revoke", "tok-1", "--package", "com.example.app", "--refund", "prorated", "--reason", "r1"]
                    + Self.addr)
                == .google(
                    .revoke(
                        RevokeGooglePurchaseRequest(
                            purchaseToken: "tok-1", packageName: "com.example.app", refund: .prorated, reason: "r1")),
                    options: defaults))
        #expect(
            try SubctlCommand.parse(
                [
                    "google", "refund", "GPA.1-2-3-4..5", "--token", "tok-1", "--package", "com.example.app",
                    "--revoke",
                    "--reason", "r2",
                ] + Self.addr)
                == .google(
                    .refund(
                        RefundGoogleOrderRequest(
                            packageName: "com.example.app", orderID: "GPA.1-2-3-4..5", purchaseToken: "tok-1",
                            revoke: true, reason: "r2")),
                    options: defaults))
        #expect(
            try SubctlCommand.parse(
                [
                    "google", "defer", "tok-1", "--package", "p.q", "--product", "pro", "--until", "2026-02-01",
                    "--reason", "r3",
                ] + Self.addr)
                == .google(
                    .deferRenewal(
                        DeferGoogleRenewalRequest(
                            purchaseToken: "tok-1", packageName: "p.q", productID: "pro",
                            desiredExpiryMilliseconds: 1_769_904_000_000, reason: "r3")),
                    options: defaults))
        #expect(
            try SubctlCommand.parse(["google", "cancel", "tok-1", "--package", "p.q", "--reason", "r4"] + Self.addr)
                == .google(
                    .cancel(CancelGoogleSubscriptionRequest(purchaseToken: "tok-1", packageName: "p.q", reason: "r4")),
                    options: defaults))
    }

    @Test(
        "what google refuses, saying what is wrong",
        arguments: [
            (["google"], "google needs revoke, refund, defer or cancel"),
            (["google", "pause"], "google needs revoke, refund, defer or cancel, got \"pause\""),
            (["google", "cancel", "--package", "p.q", "--reason", "r"] + addr, "google cancel needs a purchase TOKEN"),
            (["google", "cancel", "t", "--reason", "r"] + addr, "google cancel needs --package PACKAGE"),
            (
                ["google", "cancel", "t", "--package", "p.q"] + addr,
                "google cancel needs --reason TEXT (why, for the audit trail)"
            ),
            (
                ["google", "revoke", "t", "--package", "p.q", "--refund", "half", "--reason", "r"] + addr,
                "--refund expects full or prorated, got \"half\""
            ),
            (
                ["google", "defer", "t", "--package", "p.q", "--product", "p", "--reason", "r"] + addr,
                "google defer needs --days N or --until TIME, one of them"
            ),
            (
                ["google", "defer", "t", "--package", "p.q", "--product", "p", "--days", "400", "--reason", "r"] + addr,
                "--days expects 1 to 365, got \"400\""
            ),
            (
                ["google", "refund", "GPA.1", "--package", "p.q", "--reason", "r"] + addr,
                "google refund needs --token TOKEN"
            ),
        ])
    func refused(_ arguments: [String], _ message: String) {
        #expect(throws: SubctlError(.usage, message)) { try SubctlCommand.parse(arguments) }
    }

    @Test("defer calls DeferGoogleRenewal and prints Play's answer, then the subscription as recorded")
    func running() async throws {
        let key = SubscriptionKey(store: .google, environment: .production, storeID: "tok-1")
        let answer = GoogleStoreActionResponse(
            subscription: Subscription(
                key: key, accountID: "acct-1", productID: "pro", state: .active,
                expiresTimeMilliseconds: 1_769_904_000_000, autoRenew: true),
            detail: "renewal deferred from 2026-01-25T00:00:00Z to 2026-02-01T00:00:00Z")
        let transport = FakeTransport(answers: [
            "subscriptions.verifier.v1.Verifier/DeferGoogleRenewal": .success(answer.serialized())
        ])
        let output = Mutex<[String]>([])
        let runner = CommandRunner { text in output.withLock { $0.append(text) } }
        try await runner.run(
            try SubctlCommand.parse(
                ["google", "defer", "tok-1", "--package", "p.q", "--product", "pro", "--days", "7", "--reason", "r"]
                    + Self.addr),
            transport: transport, standardInput: { "" })
        #expect(
            output.withLock { $0 } == [
                "renewal deferred from 2026-01-25T00:00:00Z to 2026-02-01T00:00:00Z",
                "subscription google/production/tok-1 product pro state active expires 2026-02-01T00:00:00Z"
                    + " auto-renew yes account acct-1",
            ])
        #expect(
            transport.requests.withLock { $0 } == [
                DeferGoogleRenewalRequest(
                    purchaseToken: "tok-1", packageName: "p.q", productID: "pro", days: 7, reason: "r"
                ).serialized()
            ])
    }
}
