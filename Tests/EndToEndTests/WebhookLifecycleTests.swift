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
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("endpoints.json")
        try Data(
            #"{"endpoints": [{"name": "crm", "url": "\#(receiver.url)", "secrets": ["\#(Self.secret)"]}]}"#.utf8
        ).write(to: file)
        // The simulator's clock starts at the real time and runs ahead: access is judged at commit time.
        let stack = try await StoreSimStack(
            start: nil,
            entitlement: ["EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000", "WEBHOOK_ENDPOINTS_FILE": file.path])
        do {
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
        } catch {
            receiver.server.stop()
            await stack.stop()
            throw error
        }
        receiver.server.stop()
        await stack.stop()
    }
}
