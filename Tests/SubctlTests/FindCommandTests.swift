import Model
import Sockets
import Synchronization
import Testing
import Wire

@testable import SubctlKit

@Suite("subctl find")
struct FindCommandTests {
    static let options = CallOptions(address: HostPort(parsing: "127.0.0.1:8001")!, timeout: .seconds(5))

    @Test("find parses its VALUE, --reason and --entitlement (the entitlement service's address)")
    func parses() throws {
        var entitlement = Self.options
        entitlement.address = HostPort(parsing: "127.0.0.1:8003")!
        #expect(
            try SubctlCommand.parse([
                "find", "GPA.3301-2207-9912-45518..1", "--reason", "ticket 7", "--entitlement", "127.0.0.1:8003",
                "--addr", "127.0.0.1:8001",
            ])
                == .find(
                    FindCommand(
                        request: FindRequest(value: "GPA.3301-2207-9912-45518..1", reason: "ticket 7"),
                        entitlement: entitlement), options: Self.options))
        #expect(
            try SubctlCommand.parse(["find", "user-42", "--addr", "127.0.0.1:8001"])
                == .find(FindCommand(request: FindRequest(value: "user-42")), options: Self.options))
    }

    @Test(
        "find refuses a missing VALUE, an overlong reason and a bad --entitlement",
        arguments: [
            (
                ["find", "--addr", "127.0.0.1:8001"],
                "find needs a VALUE (an account id, a transaction, order or purchase token)"
            ),
            (
                ["find", "x", "--reason", String(repeating: "r", count: 513), "--addr", "127.0.0.1:8001"],
                "reason must be at most 512 bytes"
            ),
            (
                ["find", "x", "--entitlement", "nowhere", "--addr", "127.0.0.1:8001"],
                "--entitlement expects HOST:PORT with a port 1...65535, got \"nowhere\""
            ),
        ])
    func refuses(arguments: [String], message: String) {
        #expect(throws: SubctlError(.usage, message)) { try SubctlCommand.parse(arguments) }
    }

    @Test("find prints what the value was taken as, the subscription with its periods, the access and the events")
    func printsTheAnswer() async throws {
        let key = SubscriptionKey(store: .google, environment: .production, storeID: "token-abc")
        var subscription = Subscription(
            key: key, accountID: "user-42", productID: "pro.monthly", state: .active,
            expiresTimeMilliseconds: 1_769_904_000_000, autoRenew: true)
        // The state's access periods (joined) are not what find lists: the recorded ones are.
        subscription.periods = [
            Period(
                periodID: "GPA.1..0/pro.monthly", productID: "pro.monthly", startMilliseconds: 1_764_547_200_000,
                endMilliseconds: 1_769_904_000_000)
        ]
        subscription.statusIntervals = [
            StatusInterval(state: .gracePeriod, startMilliseconds: 1_767_225_600_000, endMilliseconds: nil)
        ]
        let answer = FindResponse(
            takenAs: .googleOrderID, accountIDs: ["user-42"],
            subscriptions: [
                FoundSubscription(
                    matched: .googleOrderID, subscription: subscription,
                    periods: [
                        Period(
                            periodID: "GPA.1/pro.monthly", productID: "pro.monthly",
                            startMilliseconds: 1_764_547_200_000, endMilliseconds: 1_767_225_600_000),
                        Period(
                            periodID: "GPA.1..0/pro.monthly", productID: "pro.monthly",
                            startMilliseconds: 1_767_225_600_000, endMilliseconds: 1_769_904_000_000),
                    ])
            ])
        let access = ListEntitlementsResponse(entitlements: [
            EntitlementEntry(capability: "premium", untilMilliseconds: 1_769_904_000_000)
        ])
        let verifier = AppleOperationTransport(["subscriptions.verifier.v1.Verifier/Find": answer.serialized()])
        let entitlement = AppleOperationTransport([
            "subscriptions.entitlement.v1.Entitlement/ListEntitlements": access.serialized()
        ])
        var entitlementOptions = Self.options
        entitlementOptions.address = HostPort(parsing: "127.0.0.1:8003")!
        let lines = Mutex<[String]>([])
        let runner = CommandRunner(write: { line in lines.withLock { $0.append(line) } })
        try await runner.run(
            .find(
                FindCommand(request: FindRequest(value: "GPA.1..0"), entitlement: entitlementOptions),
                options: Self.options), transport: verifier, entitlement: entitlement, standardInput: { "" })
        #expect(
            lines.withLock { $0 } == [
                "found GPA.1..0 as google_order_id",
                "account user-42",
                "subscription google/production/token-abc product pro.monthly state active expires"
                    + " 2026-02-01T00:00:00Z auto-renew yes account user-42 matched google_order_id",
                "  period GPA.1/pro.monthly product pro.monthly start 2025-12-01T00:00:00Z end 2026-01-01T00:00:00Z"
                    + " revoked -",
                "  period GPA.1..0/pro.monthly product pro.monthly start 2026-01-01T00:00:00Z end 2026-02-01T00:00:00Z"
                    + " revoked -",
                "  status grace_period from 2026-01-01T00:00:00Z to -",
                "access user-42 premium until 2026-02-01T00:00:00Z",
            ])
        let sent = try ListEntitlementsRequest(serialized: try #require(entitlement.requests.withLock { $0.first }).1)
        #expect(sent.accountID == "user-42")
    }
}
