import Config
import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// The whole system against the store simulator: `storesim`, `ledger`, `verifier` and
/// `entitlement` as processes on loopback ports, configured only by the files and variables
/// `storesim` writes. Access is asked for at the simulator's instant (its clock runs ahead).
@Suite("End to end: App Store through the store simulator")
struct AppleStoreSimulatorTests {
    /// The stack, started in the order a deployment would: stores, ledger, entitlement, verifier.
    final class Stack: @unchecked Sendable {  // used from one test task at a time
        let entitlementStack: EntitlementStack
        let storesim: ServiceProcess
        let storesimPort: Int
        let verifier: ServiceProcess
        let verifierClient: RPCClient
        let entitlement: ServiceProcess
        let entitlementClient: RPCClient

        init() async throws {
            entitlementStack = try await EntitlementStack()
            let directory = entitlementStack.directory.appendingPathComponent("storesim")
            storesim = try ServiceProcess("storesim", environment: ["STORESIM_DIR": directory.path])
            _ = try #require(await storesim.line(containing: "\"msg\":\"storesim ready\""), "\(storesim.log)")
            storesimPort = try await storesim.httpPort()
            var settings: [String: String] = ["LEDGER_ADDR": "127.0.0.1:\(entitlementStack.ledgerPort)"]
            let file = try String(contentsOf: directory.appendingPathComponent("verifier.env"), encoding: .utf8)
            for line in file.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                settings[parts[0]] = parts[1]
            }
            (entitlement, entitlementClient, _) = try await entitlementStack.startEntitlement()
            verifier = try ServiceProcess("verifier", environment: settings)
            verifierClient = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: try await verifier.rpcPort())])
            let verifierHTTP = try await verifier.httpPort()
            _ = try await control(
                "apple/notification-url", ["url": "http://127.0.0.1:\(verifierHTTP)/apple/notifications/sandbox"])
        }

        func stop() async {
            verifierClient.shutdown()
            entitlementClient.shutdown()
            for process in [verifier, entitlement, storesim] {
                process.terminate()
                _ = await process.waitForExit()
            }
            await entitlementStack.stop()
        }

        /// POSTs to the simulator's control surface; returns the JSON answer. Every notification
        /// the action made must have been answered 200 by the verifier.
        @discardableResult
        func control(_ path: String, _ body: [String: Any] = [:]) async throws -> [String: Any] {
            let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            let (status, answer) = try await httpPost(port: storesimPort, path: "/control/\(path)", body: text)
            try #require(status == 200, "storesim /control/\(path) answered \(status): \(answer)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])
            for attempt in object["notifications"] as? [[String: Any]] ?? [] {
                #expect(attempt["status"] as? Int == 200, "a notification was answered \(attempt)")
            }
            return object
        }

        /// A purchase of the monthly product with `account` as its appAccountToken, then the
        /// app's call to the verifier with the transaction id; returns the original transaction
        /// id and the verifier's answer.
        func buy(account: String) async throws -> (String, VerifyPurchaseResponse) {
            let bought = try await control(
                "apple/buy", ["productId": "com.example.pro.monthly", "appAccountToken": account])
            let original = try #require(bought["originalTransactionId"] as? String)
            let verified: VerifyPurchaseResponse = try await verifierClient.call(
                "subscriptions.verifier.v1.Verifier/VerifyApplePurchase",
                VerifyApplePurchaseRequest(
                    accountID: account, transactionID: original, environment: .sandbox,
                    idempotencyKey: "buy-\(original)"))
            return (original, verified)
        }

        func simNow() async throws -> Int64 {
            let (_, body) = try await httpGet(port: storesimPort, path: "/control/clock")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            return try #require((object["now"] as? NSNumber)?.int64Value)
        }

        func check(_ account: String, at: Int64) async throws -> CheckAccessResponse {
            try await entitlementClient.call(
                "subscriptions.entitlement.v1.Entitlement/CheckAccess",
                CheckAccessRequest(accountID: account, capability: "pro", atMilliseconds: at))
        }

        /// CheckAccess at the simulator's instant, asked again (at most 20 s) until `expected`
        /// holds: the notification's processing runs after the verifier's 200.
        func eventually(
            _ account: String, _ what: String, _ expected: (CheckAccessResponse) -> Bool
        ) async throws -> CheckAccessResponse {
            let deadline = ContinuousClock.now + .seconds(20)
            var last: CheckAccessResponse?
            while ContinuousClock.now < deadline {
                let answer = try await check(account, at: try await simNow())
                if expected(answer) { return answer }
                last = answer
                try await Task.sleep(for: .milliseconds(10))
            }
            Issue.record("CheckAccess never showed \(what); last answer \(String(describing: last))")
            return try #require(last)
        }
    }

    @Test(
        "purchase, twelve renewals, cancel and expiry at period end: CheckAccess follows each step, and the ledger has the history"
    )
    func lifecycle() async throws {
        let stack = try await Stack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, verified) = try await stack.buy(account: account)
            #expect(verified.subscription?.key.storeID == original && verified.subscription?.state == .active)
            var answer = try await stack.eventually(account, "the purchase") { $0.allowed }
            #expect(answer.grant?.key?.storeID == original && answer.grant?.productID == "com.example.pro.monthly")
            var until = try #require(answer.untilMilliseconds)

            for renewal in 1...12 {
                try await stack.control("clock/advance", ["by": "+31d"])
                let previous = until
                answer = try await stack.eventually(account, "renewal \(renewal)") {
                    $0.allowed && ($0.untilMilliseconds ?? 0) > previous
                }
                until = try #require(answer.untilMilliseconds)
            }

            try await stack.control("apple/cancel", ["transactionId": original])
            let cancelled = try await stack.eventually(account, "the cancellation") {
                $0.allowed && $0.grant?.state == .cancelled
            }
            #expect(cancelled.untilMilliseconds == until)
            // Access ends at the paid end by itself; the EXPIRED notification then marks the state.
            try await stack.control("clock/advance", ["by": "+32d"])
            #expect(try await stack.check(account, at: try await stack.simNow()).allowed == false)
            let expired = try await stack.eventually(account, "the expiry") {
                !$0.allowed && $0.grant?.state == .expired
            }
            #expect(expired.reason == .expired)

            let history: GetHistoryResponse = try await stack.entitlementStack.ledgerClient.call(
                "\(EntitlementStack.ledgerService)/GetHistory",
                GetHistoryRequest(
                    key: SubscriptionKey(store: .apple, environment: .sandbox, storeID: original), pageSize: 100))
            let types = history.events.compactMap(\.storeType)
            #expect(types.filter { $0 == "DID_RENEW" }.count == 12)
            #expect(
                types.contains("SUBSCRIBED") && types.contains("DID_CHANGE_RENEWAL_STATUS") && types.contains("EXPIRED")
            )
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a refund ends access at once and its reversal restores it; a failed payment keeps access through grace")
    func refundAndGrace() async throws {
        let stack = try await Stack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buy(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("clock/advance", ["by": "+3d"])
            try await stack.control("apple/refund", ["transactionId": original])
            let refunded = try await stack.eventually(account, "the refund") { !$0.allowed }
            #expect(refunded.reason == .revoked)
            try await stack.control("apple/reverse-refund", ["transactionId": original])
            _ = try await stack.eventually(account, "the reversal") { $0.allowed }

            try await stack.control("apple/fail-payment", ["transactionId": original])
            try await stack.control("clock/advance", ["by": "+29d"])
            let grace = try await stack.eventually(account, "the grace period") {
                $0.allowed && $0.grant?.state == .gracePeriod
            }
            #expect(grace.untilMilliseconds ?? 0 > (try await stack.simNow()))
            try await stack.control("apple/recover", ["transactionId": original])
            _ = try await stack.eventually(account, "the recovery") { $0.allowed && $0.grant?.state == .active }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
