import AppStore
import Clients
import Foundation
import Model
import RPC
import SQLite
import Testing
import VerifierService
import Wire

@Suite("Apple notification ingress", .serialized)
struct AppleNotificationIngressTests {
    static let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")

    @Test(
        "a notification delivered 5 times at once: five 200s, one inbox entry, one event, state from its own data")
    func duplicateDeliveries() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(expiresIn: 30), renewal: harness.renewal(), status: 1))
        let payload = try harness.notification(
            uuid: "9d1c0d6e-1f3a-4c55-8f0b-6a1f0c7e2b11", type: "SUBSCRIBED", subtype: "INITIAL_BUY",
            transaction: harness.transaction(expiresIn: 30), renewal: harness.renewal())
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await harness.deliver(payload).0 } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == [200, 200, 200, 200, 200])
        #expect(harness.metric("notifications_received_total") == 1)
        #expect(harness.metric("notifications_duplicate_total") == 4)
        // Recorded at the instant Apple signed it: no lag.
        #expect(
            harness.metric(#"notification_delivery_lag_seconds_bucket{le="0.1",stage="recorded",store="apple"}"#) == 1)
        #expect(harness.metric(#"notification_delivery_lag_seconds_sum{stage="recorded",store="apple"}"#) == 0)
        await harness.adapter.processingIdle()
        #expect(harness.metric("notifications_processed_total") == 1)
        #expect(harness.metric(#"notification_delivery_lag_seconds_count{stage="processed",store="apple"}"#) == 1)
        let events = try await harness.history(Self.key)
        #expect(events.count == 1)
        #expect(events.first?.notificationID == "9d1c0d6e-1f3a-4c55-8f0b-6a1f0c7e2b11")
        #expect(events.first?.kind == .purchased && events.first?.storeType == "SUBSCRIBED")
        let subscription = try #require(try await harness.ledger.subscription(Self.key))
        #expect(subscription.state == .active && subscription.productID == "com.example.monthly")
        // A SUBSCRIBED with renewal info and status is the whole state: no status call.
        #expect(harness.api.calls.isEmpty)
        let inbox = try await harness.ledger.listInbox(ListInboxRequest(status: .processed))
        #expect(inbox.entries.map(\.notificationID) == ["9d1c0d6e-1f3a-4c55-8f0b-6a1f0c7e2b11"])
        await harness.stop()
    }

    @Test("a payload with a bad signature is answered 400, sampled in memory with its reason, and writes nothing")
    func badSignature() async throws {
        let harness = try await AppleAdapterHarness()
        let payload = try harness.notification(
            type: "DID_RENEW", transaction: harness.transaction(), renewal: harness.renewal())
        var parts = payload.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        let (status, body) = try await harness.deliver(parts.joined(separator: "."))
        #expect(status == 400)
        #expect(body.contains("bad_signature"))
        #expect(harness.metric(#"notification_validation_failures_total{reason="signature",store="apple"}"#) == 1)
        #expect(harness.metric(#"notification_validation_failures_total{reason="malformed",store="apple"}"#) == 0)
        #expect(harness.metric("notifications_received_total") == 0)
        let rejected = try await harness.ledger.listInbox(ListInboxRequest(status: .rejected))
        #expect(rejected.entries.isEmpty)
        let samples = harness.adapter.ingress.recentSamples["apple/bad_signature"] ?? []
        #expect(samples.count == 1)
        #expect(samples.first?.clientAddress == "127.0.0.1")
        #expect(samples.first?.payload == String(parts.joined(separator: ".").prefix(1024)))
        #expect(try await harness.ledger.subscription(Self.key) == nil)
        #expect(try await harness.ledger.listInbox(ListInboxRequest()).entries.isEmpty)
        #expect(harness.api.calls.isEmpty)
        await harness.stop()
    }

    @Test("with online checks on, an unreachable OCSP responder is 503 (Apple retries) and nothing is recorded")
    func onlineCheckUnreachable() async throws {
        let harness = try await AppleAdapterHarness(revocation: { chain in
            try AppleRevocationChecker(anchors: [chain.root]) { _, _ in throw URLError(.timedOut) }
        })
        let payload = try harness.notification(
            type: "DID_RENEW", transaction: harness.transaction(), renewal: harness.renewal())
        let (status, _) = try await harness.deliver(payload)
        #expect(status == 503)
        #expect(try await harness.ledger.allInboxIDs().isEmpty)
        await harness.stop()
    }

    @Test("a body that is not {\"signedPayload\": …} is answered 400 and nothing is recorded")
    func badBody() async throws {
        let harness = try await AppleAdapterHarness()
        for body in ["", "[]", "{\"signedPayload\": 5}", "not json"] {
            let (status, _) = try await harness.post(Array(body.utf8))
            #expect(status == 400, "\(body)")
        }
        #expect(harness.metric(#"notification_validation_failures_total{reason="malformed",store="apple"}"#) == 4)
        #expect(try await harness.ledger.allInboxIDs().isEmpty)
        await harness.stop()
    }

    @Test("when the API fails, the notification's own data is recorded and reconciliation finishes the entry")
    func apiOutageThenReconciliation() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.setFailing(true)
        // Without `status` the notification does not carry the whole state: the API is asked.
        let payload = try harness.notification(
            uuid: "0f5e5c2a-7d0e-4c7b-a1d4-3f8f1b6c9e20", type: "DID_CHANGE_RENEWAL_STATUS",
            subtype: "AUTO_RENEW_DISABLED", transaction: harness.transaction(), renewal: harness.renewal(autoRenew: 0),
            status: nil)
        #expect(try await harness.deliver(payload).0 == 200)
        await harness.adapter.processingIdle()
        let fromPayload = try #require(try await harness.ledger.subscription(Self.key))
        #expect(fromPayload.state == .cancelled)
        let failed = try await harness.ledger.listInbox(ListInboxRequest(status: .failed))
        #expect(failed.entries.map(\.notificationID) == ["0f5e5c2a-7d0e-4c7b-a1d4-3f8f1b6c9e20"])
        #expect(failed.entries.first?.lastError?.contains("network") == true)
        #expect(harness.metric(#"notification_processing_errors_total{reason="store_api",store="apple"}"#) == 1)
        #expect(harness.metric("notifications_processed_total") == 0)

        // The store comes back; the user meanwhile turned renewal on again.
        harness.api.setFailing(false)
        harness.clock.advance(seconds: 120)
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(autoRenew: 1), status: 1))
        await AppleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        #expect(harness.metric("notifications_processed_total") == 1)
        // Processed two minutes after Apple signed it: in the 300-second bucket, not the 60.
        #expect(harness.metric(#"notification_delivery_lag_seconds_sum{stage="processed",store="apple"}"#) == 120)
        #expect(
            harness.metric(#"notification_delivery_lag_seconds_bucket{le="60.0",stage="processed",store="apple"}"#) == 0
        )
        #expect(
            harness.metric(#"notification_delivery_lag_seconds_bucket{le="300.0",stage="processed",store="apple"}"#)
                == 1)
        #expect(harness.metric(#"reconciliation_passes_total{outcome="completed",store="apple"}"#) == 1)
        let processed = try await harness.ledger.listInbox(ListInboxRequest(status: .processed))
        #expect(processed.entries.map(\.notificationID) == ["0f5e5c2a-7d0e-4c7b-a1d4-3f8f1b6c9e20"])
        let current = try #require(try await harness.ledger.subscription(Self.key))
        #expect(current.state == .active && current.autoRenew)
        await harness.stop()
    }

    /// A refund made a second ago that reached the verifier only through Get Notification History
    /// (`uuid`), with the API answering the revoked state; returns the refund's time.
    static func refundOnlyInHistory(_ harness: AppleAdapterHarness, uuid: String) throws -> Int64 {
        let refund = harness.clock.milliseconds - 1000
        harness.api.set(
            "2000000001",
            .init(
                transaction: harness.transaction(revokedAt: refund), renewal: harness.renewal(autoRenew: 0), status: 5))
        harness.api.addHistory(
            try harness.notification(
                uuid: uuid, type: "REFUND", transaction: harness.transaction(revokedAt: refund),
                renewal: harness.renewal(autoRenew: 0)))
        return refund
    }

    @Test("reconciliation records a notification it finds only in Apple's history and advances the watermark")
    func historyBackfill() async throws {
        let harness = try await AppleAdapterHarness()
        let refund = try Self.refundOnlyInHistory(harness, uuid: "5a6b7c8d-0000-4000-8000-000000000001")
        await AppleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        #expect(harness.metric("reconciliation_transactions_discovered_total") == 1)
        #expect(harness.metric("notifications_received_total") == 1)
        #expect(harness.metric(#"notification_delivery_lag_seconds_count{stage="recorded",store="apple"}"#) == 1)
        let subscription = try #require(try await harness.ledger.subscription(Self.key))
        #expect(subscription.state == .revoked && subscription.revokedTimeMilliseconds == refund)
        let events = try await harness.history(Self.key)
        #expect(events.contains { $0.kind == .refunded && $0.notificationID == "5a6b7c8d-0000-4000-8000-000000000001" })
        let cursor = try await harness.ledger.getCursor(GetCursorRequest(name: "apple-notification-history-sandbox"))
        #expect(cursor.value == harness.clock.milliseconds)
        // A second pass, a minute later, asks again from the watermark less the hour of overlap,
        // finds the same notification again and changes nothing.
        let first = harness.clock.milliseconds
        harness.clock.advance(seconds: 60)
        await AppleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        #expect(try await harness.history(Self.key).filter { $0.kind == .refunded }.count == 1)
        #expect(harness.metric("reconciliation_transactions_discovered_total") == 1)
        #expect(harness.metric(#"reconciliation_passes_total{outcome="completed",store="apple"}"#) == 2)
        let windows = harness.api.calls.filter { $0.hasPrefix("notificationHistory ") }
        #expect(
            windows == [
                "notificationHistory \(first - 86_400_000)...\(first)",  // a day back at first
                "notificationHistory \(first - 3_600_000)...\(first + 60_000)",  // then an hour of overlap
            ])
        await harness.stop()
    }

    @Test(
        "a notification from Apple's history that the ledger fails to record keeps the watermark; the next pass asks again and records it"
    )
    func historyRecordFailure() async throws {
        let harness = try await AppleAdapterHarness()
        let refund = try Self.refundOnlyInHistory(harness, uuid: "5a6b7c8d-0000-4000-8000-000000000002")
        // The ledger's storage fails every inbox write (a trigger put into its file from here):
        // an internal error, not a refusal of the notification.
        let file = try SQLiteDatabase(path: harness.directory.appendingPathComponent("ledger.sqlite").path)
        try file.execute(
            "CREATE TRIGGER refuse_inbox BEFORE INSERT ON inbox BEGIN SELECT RAISE(ABORT, 'inbox writes fail'); END")
        let first = harness.clock.milliseconds
        await AppleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        let name = GetCursorRequest(name: "apple-notification-history-sandbox")
        var cursor = try await harness.ledger.getCursor(name)
        #expect(cursor.value == 0)
        #expect(harness.metric(#"reconciliation_passes_total{outcome="failed",store="apple"}"#) == 1)
        #expect(harness.metric(#"reconciliation_passes_total{outcome="completed",store="apple"}"#) == 0)
        #expect(try await harness.ledger.subscription(Self.key) == nil)
        // The storage mends; the next pass asks for the whole first window again.
        try file.execute("DROP TRIGGER refuse_inbox")
        harness.clock.advance(seconds: 60)
        await AppleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        let subscription = try #require(try await harness.ledger.subscription(Self.key))
        #expect(subscription.state == .revoked && subscription.revokedTimeMilliseconds == refund)
        cursor = try await harness.ledger.getCursor(name)
        #expect(cursor.value == harness.clock.milliseconds)
        let windows = harness.api.calls.filter { $0.hasPrefix("notificationHistory ") }
        #expect(
            windows == [
                "notificationHistory \(first - 86_400_000)...\(first)",
                "notificationHistory \(first + 60_000 - 86_400_000)...\(first + 60_000)",
            ])
        await harness.stop()
    }

    @Test("reconciliation refreshes a subscription in grace from the API")
    func refreshesAtRisk() async throws {
        let harness = try await AppleAdapterHarness()
        var renewal = harness.renewal()
        renewal["isInBillingRetryPeriod"] = true
        renewal["gracePeriodExpiresDate"] = harness.clock.milliseconds + 3 * 86_400_000
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(expiresIn: -1), renewal: renewal, status: 4))
        let payload = try harness.notification(
            type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: harness.transaction(expiresIn: -1),
            renewal: renewal, status: 4)
        #expect(try await harness.deliver(payload).0 == 200)
        await harness.adapter.processingIdle()
        #expect(try await harness.ledger.subscription(Self.key)?.state == .gracePeriod)
        // Payment recovered: the next pass finds the renewal.
        harness.clock.advance(seconds: 3600)
        harness.api.set(
            "2000000001",
            .init(
                transaction: harness.transaction(id: "2000000010", expiresIn: 30), renewal: harness.renewal(), status: 1
            ))
        await AppleReconciler(adapter: harness.adapter, interval: .zero).runPass()
        let recovered = try #require(try await harness.ledger.subscription(Self.key))
        #expect(recovered.state == .active && recovered.latestOrderID == "2000000010")
        #expect(harness.metric("reconciliation_subscriptions_refreshed_total") == 1)
        #expect(harness.metric("reconciliation_changes_found_total") == 1)
        await harness.stop()
    }
}
