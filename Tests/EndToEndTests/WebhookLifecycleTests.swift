import Foundation
import HTTP
import Model
import RPC
import TestSupport
import Testing
import Wire

/// The whole system with events on: the store simulator drives a year of both stores'
/// lifecycles, the entitlement process computes the event log and delivers it to a receiver.
@Suite("End to end: a year of both stores' events, delivered")
struct WebhookLifecycleTests {
    static let secret = "whsec_" + Data((0..<40).map { UInt8($0 * 3 % 256) }).base64EncodedString()

    @Test(
        "every event of a year of Apple and Google renewals arrives signed, in order per account, the same as ListEvents"
    )
    func yearOfEvents() async throws {
        let receiver = try WebhookReceiver(secret: Self.secret)
        let file = try Self.endpointsFile(receiver)
        // The simulator's clock starts at the real time and runs ahead: access is judged at commit time.
        let stack = try await StoreSimStack(
            start: nil,
            entitlement: ["EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000", "WEBHOOK_ENDPOINTS_FILE": file.path])
        try await receiver.run(beside: stack) {
            let apple = UUID().uuidString.lowercased()
            let google = "user-\(UUID().uuidString.prefix(8))"
            let (original, _) = try await stack.buyOnAppStore(account: apple)
            let (token, _) = try await stack.buyOnPlay(account: google)
            for _ in 0..<11 { try await stack.control("clock/advance", ["by": "+31d"]) }
            try await stack.control("apple/cancel", ["transactionId": original])
            try await stack.control("google/cancel", ["purchaseToken": token])
            try await stack.settle()
            // Every event in the log reaches the receiver (the log is written a moment after the view).
            let ledger = stack.entitlementStack.ledgerClient
            var logged: [Event] = []
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                var after: UInt64 = 0
                logged = []
                while true {
                    let page: ListEventsResponse = try await ledger.call(
                        LedgerRPC.listEvents, ListEventsRequest(afterSequence: after, limit: 1000))
                    logged += page.events
                    guard page.lastSequence > after else { break }
                    after = page.lastSequence
                }
                let delivered = Set(receiver.all.filter { $0.status == 200 }.map(\.id))
                let renewals = logged.filter { $0.type == "subscription.renewed" }.count
                if renewals >= 22,
                    logged.contains(where: { $0.type == "subscription.renewal_disabled" && $0.accountID == google }),
                    Set(logged.map(\.id)) == delivered
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            let got = receiver.all.filter { $0.status == 200 }
            #expect(got.allSatisfy { $0.verified })
            #expect(Set(got.map(\.id)) == Set(logged.map(\.id)) && got.count == logged.count)
            // In the log's order for each account.
            for account in [apple, google] {
                #expect(
                    got.filter { $0.account == account }.map(\.id)
                        == logged.filter { $0.accountID == account }.map(\.id),
                    "\(account)")
            }
            let types = Set(logged.map(\.type))
            for type in [
                "subscription.purchased", "subscription.renewed", "subscription.renewal_disabled", "access.granted",
                "access.extended",
            ] {
                #expect(types.contains(type), "\(type)")
            }
            #expect(logged.filter { $0.type == "subscription.renewed" }.count >= 22)
            #expect(
                logged.filter { $0.type == "access.granted" }.compactMap(\.accountID).sorted()
                    == [apple, google].sorted())
            // PyPI's standardwebhooks verifies every delivery as it came.
            let python = HTTPAPITests.root.appendingPathComponent(".build/python/bin/python3")
            let deliveries: [[String: Any]] = got.map {
                ["secret": Self.secret, "headers": $0.headers, "body": $0.body]
            }
            let checked = try await runCommand(
                python, [HTTPAPITests.root.appendingPathComponent("Tests/Python/verify_webhooks.py").path],
                input: try JSONSerialization.data(withJSONObject: deliveries))
            let verdicts = checked.output.split(separator: "\n")
            #expect(checked.status == 0 && verdicts.count == got.count, "\(checked.errors)")
            #expect(
                verdicts.allSatisfy { $0.hasPrefix(#"{"ok": "#) },
                "\(verdicts.first { !$0.hasPrefix(#"{"ok": "#) } ?? "")")
            try await stack.entitlementStack.expectEventLogComplete()
        }
    }

    /// An endpoints file naming `receiver` as `crm`.
    static func endpointsFile(_ receiver: WebhookReceiver) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("endpoints.json")
        try Data(
            #"{"endpoints": [{"name": "crm", "url": "\#(receiver.url)", "secrets": ["\#(secret)"]}]}"#.utf8
        ).write(to: file)
        return file
    }

    /// Every event of the log, oldest first.
    static func log(_ stack: StoreSimStack) async throws -> [Event] {
        var after: UInt64 = 0
        var logged: [Event] = []
        while true {
            let page: ListEventsResponse = try await stack.entitlementStack.ledgerClient.call(
                LedgerRPC.listEvents, ListEventsRequest(afterSequence: after, limit: 1000))
            logged += page.events
            guard page.lastSequence > after else { return logged }
            after = page.lastSequence
        }
    }

    /// Waits (at most 30 s) until the receiver acknowledged every event of the log and `more` holds.
    static func delivered(_ stack: StoreSimStack, _ receiver: WebhookReceiver, _ more: ([Event]) -> Bool)
        async throws -> [Event]
    {
        let deadline = ContinuousClock.now + .seconds(30)
        var logged: [Event] = []
        while ContinuousClock.now < deadline {
            logged = try await log(stack)
            if more(logged), Set(logged.map(\.id)).isSubset(of: Set(receiver.all.filter { $0.status == 200 }.map(\.id)))
            {
                return logged
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the receiver never had every event: \(logged.count) logged")
        return logged
    }

    @Test(
        "the delivering instance is killed with SIGKILL mid-stream: the other one takes over, nothing is lost, a duplicate only with its id"
    )
    func killedDeliverer() async throws {
        let receiver = try WebhookReceiver(secret: Self.secret)
        let file = try Self.endpointsFile(receiver)
        let settings = ["EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000", "WEBHOOK_ENDPOINTS_FILE": file.path]
        let stack = try await StoreSimStack(start: nil, entitlement: settings)
        let (other, otherClient, otherHTTP) = try await stack.entitlementStack.startEntitlement(environment: settings)
        do {
            let apple = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: apple)
            for _ in 0..<3 { try await stack.control("clock/advance", ["by": "+31d"]) }
            try await stack.settle()
            _ = try await Self.delivered(stack, receiver) { $0.filter { $0.type == "subscription.renewed" }.count >= 3 }
            // Kill whichever instance delivers, mid-stream: more renewals are coming.
            let first = try await HostileLoadTests.metric(stack.entitlementHTTP, #"webhook_delivering{endpoint="crm"}"#)
            let victim = try #require(first == 1 ? stack.entitlement as? ServiceProcess : other)
            let survivor = first == 1 ? otherHTTP : stack.entitlementHTTP
            try await stack.control("clock/advance", ["by": "+31d"])
            victim.kill()
            _ = await victim.waitForExit()
            for _ in 0..<3 { try await stack.control("clock/advance", ["by": "+31d"]) }
            try await stack.control("apple/cancel", ["transactionId": original])
            let logged = try await Self.delivered(stack, receiver) {
                $0.filter { $0.type == "subscription.renewed" }.count >= 7
                    && $0.contains { $0.type == "subscription.renewal_disabled" }
            }
            #expect(try await HostileLoadTests.metric(survivor, #"webhook_delivering{endpoint="crm"}"#) == 1)
            let got = receiver.all.filter { $0.status == 200 }
            #expect(got.allSatisfy { $0.verified })
            // Each logged event at least once; any repeat is of a logged event, with its id.
            #expect(Set(got.map(\.id)) == Set(logged.map(\.id)))
            // The first arrival of each event follows the log's order for the account.
            var seen = Set<String>()
            let firsts = got.filter { $0.account == apple && seen.insert($0.id).inserted }.map(\.id)
            #expect(firsts == logged.filter { $0.accountID == apple }.map(\.id))
            try await stack.entitlementStack.expectEventLogComplete()
        } catch {
            otherClient.shutdown()
            other.terminate()
            _ = await other.waitForExit()
            receiver.server.stop()
            await stack.stop()
            throw error
        }
        otherClient.shutdown()
        other.terminate()
        _ = await other.waitForExit()
        receiver.server.stop()
        await stack.stop()
    }
}
