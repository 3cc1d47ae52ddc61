import AppStore
import Clients
import Config
import Foundation
import HTTP
import Lifecycle
import Model
import Observability
import Testing
import Wire

@testable import VerifierService

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The refusal `admitted` holds, if any.
private func refusal(
    _ admitted: Result<BoundedWorkQueue.Reservation, NotificationAdmission.Refusal>
) -> NotificationAdmission.Refusal? {
    if case .failure(let refusal) = admitted { return refusal }
    return nil
}

/// POSTs `body` to `url`: the status, the `Retry-After` header and the body.
private func exchange(_ url: URL, body: Data, authorization: String? = nil) async throws -> (
    status: Int, retryAfter: String?, body: [String: Any]
) {
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.httpBody = body
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.setValue("close", forHTTPHeaderField: "Connection")
    if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
    let (data, response) = try await URLSession.shared.data(for: request)
    let http = response as? HTTPURLResponse
    let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    return (http?.statusCode ?? 0, http?.value(forHTTPHeaderField: "Retry-After"), object)
}

@Suite("Notification admission", .timeLimit(.minutes(5)))
struct NotificationAdmissionTests {
    typealias Refusal = NotificationAdmission.Refusal

    @Test(
        "Retry-After is the backlog over the measured rate, rounded up, within 1…300 s; 10 s without a rate",
        arguments: [
            (1_000, 200.0, 5), (1_001, 200.0, 6), (1, 1_000.0, 1), (100_000, 1.0, 300), (0, 5.0, 1),
            (1_000, nil, 10), (1_000, 0.0, 10),
        ] as [(Int, Double?, Int)])
    func retryAfter(backlog: Int, perSecond: Double?, seconds: Int) {
        #expect(NotificationAdmission.retryAfter(backlog: backlog, perSecond: perSecond) == seconds)
    }

    @Test("a delivery is admitted below both bounds; the recording bound is met first, then the backlog bound")
    func decide() {
        let limits = NotificationAdmission.Limits(backlog: 10, recording: 2)
        typealias Counts = NotificationAdmission.Counts
        #expect(
            NotificationAdmission.decide(Counts(running: 8, waiting: 0, reserved: 1), limits: limits, perSecond: 1)
                == nil)
        #expect(
            NotificationAdmission.decide(Counts(running: 0, waiting: 0, reserved: 2), limits: limits, perSecond: 1)
                == Refusal(reason: .recording, backlog: 2, retryAfterSeconds: 2))
        #expect(
            NotificationAdmission.decide(Counts(running: 8, waiting: 2, reserved: 0), limits: limits, perSecond: 4)
                == Refusal(reason: .backlog, backlog: 10, retryAfterSeconds: 3))
        #expect(
            NotificationAdmission.decide(Counts(running: 8, waiting: 1, reserved: 2), limits: limits, perSecond: nil)
                == Refusal(reason: .recording, backlog: 11, retryAfterSeconds: 10))
    }

    @Test("the processing rate counts the last 10 s, from the first second in that window")
    func processingRate() {
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        var rate = ProcessingRate()
        #expect(rate.perSecond(at: start) == nil)
        for _ in 0..<4 { rate.record(at: start) }
        #expect(rate.perSecond(at: start.addingTimeInterval(0.5)) == 4)
        rate.record(at: start.addingTimeInterval(3))
        #expect(rate.perSecond(at: start.addingTimeInterval(3)) == 5.0 / 4)
        #expect(rate.perSecond(at: start.addingTimeInterval(9)) == 5.0 / 10)
        // The first second has left the window; the one at 3 s stays until 13 s.
        #expect(rate.perSecond(at: start.addingTimeInterval(10)) == 1.0 / 8)
        #expect(rate.perSecond(at: start.addingTimeInterval(13)) == nil)
    }

    @Test("the bounds: defaults, from the environment, and a value that cannot work refuses to start, named")
    func limitsFromEnvironment() throws {
        #expect(try NotificationAdmission.Limits(environment: EnvironmentReader([:])) == .default)
        #expect(NotificationAdmission.Limits.default == .init(backlog: 1_000, recording: 64))
        #expect(
            try NotificationAdmission.Limits(
                environment: EnvironmentReader(["NOTIFY_BACKLOG_LIMIT": "5000", "NOTIFY_RECORDING_LIMIT": "16"]))
                == .init(backlog: 5_000, recording: 16))
        // A backlog bound below the default recording bound lowers that one to it.
        #expect(
            try NotificationAdmission.Limits(environment: EnvironmentReader(["NOTIFY_BACKLOG_LIMIT": "10"]))
                == .init(backlog: 10, recording: 10))
        for (values, variable) in [
            (["NOTIFY_BACKLOG_LIMIT": "0"], "NOTIFY_BACKLOG_LIMIT"),
            (["NOTIFY_BACKLOG_LIMIT": "lots"], "NOTIFY_BACKLOG_LIMIT"),
            (["NOTIFY_RECORDING_LIMIT": "0"], "NOTIFY_RECORDING_LIMIT"),
            (["NOTIFY_BACKLOG_LIMIT": "10", "NOTIFY_RECORDING_LIMIT": "11"], "NOTIFY_RECORDING_LIMIT"),
        ] {
            #expect {
                _ = try NotificationAdmission.Limits(environment: EnvironmentReader(values))
            } throws: { ($0 as? ConfigError)?.variable == variable }
        }
    }

    @Test("the verifier refuses to start on a bound that cannot work, naming it")
    func serviceRefusesBadBound() throws {
        #expect {
            _ = try VerifierService.make(
                environment: EnvironmentReader(["NOTIFY_BACKLOG_LIMIT": "0", "LEDGER_ADDR": "127.0.0.1:1"]),
                signal: ShutdownSignal())
        } throws: { ($0 as? ConfigError)?.variable == "NOTIFY_BACKLOG_LIMIT" }
    }

    @Test("the queue holds deliveries to its bounds, gives back a released place, and times Retry-After by its rate")
    func queue() async throws {
        let clock = AppleAdapterHarness.Clock()
        let gauge = Gauge()
        let queue = BoundedWorkQueue(
            concurrency: 1, limits: .init(backlog: 2, recording: 1), clock: { clock.now }, backlogGauge: gauge)
        // One delivery being recorded meets the recording bound.
        let first = try queue.admit().get()
        #expect(refusal(queue.admit()) == Refusal(reason: .recording, backlog: 1, retryAfterSeconds: 10))
        queue.release(first)
        #expect(queue.backlog == 0 && gauge.value == 0)
        // One running (held) and one waiting meet the backlog bound; nothing has finished: 10 s.
        let gate = FakeGooglePlayAPI.Gate()
        queue.submit(try queue.admit().get()) { await gate.wait() }
        await gate.arrival()
        queue.submit(try queue.admit().get()) {}
        #expect(queue.backlog == 2 && gauge.value == 2)
        #expect(refusal(queue.admit()) == Refusal(reason: .backlog, backlog: 2, retryAfterSeconds: 10))
        gate.open()
        await queue.idle()
        #expect(queue.backlog == 0 && gauge.value == 0)
        // Two processed within a second: 2 a second, so a backlog of 2 clears in 1 s.
        let held = FakeGooglePlayAPI.Gate()
        queue.submit(try queue.admit().get()) { await held.wait() }
        await held.arrival()
        queue.submit(try queue.admit().get()) {}
        #expect(refusal(queue.admit()) == Refusal(reason: .backlog, backlog: 2, retryAfterSeconds: 1))
        clock.advance(seconds: 3)
        #expect(refusal(queue.admit()) == Refusal(reason: .backlog, backlog: 2, retryAfterSeconds: 4))
        clock.advance(seconds: 10)
        #expect(refusal(queue.admit()) == Refusal(reason: .backlog, backlog: 2, retryAfterSeconds: 10))
        held.open()
        await queue.idle()
        #expect(queue.backlog == 0)
    }

    @Test("Google: above the backlog bound a push is 503 with Retry-After and nothing is recorded; once drained, it is")
    func googleSheds() async throws {
        let harness = try await GoogleNotificationIngressTests.PushHarness(admission: .init(backlog: 1, recording: 1))
        let base = harness.base
        base.api.setSubscription("tok-1", base.purchase(acknowledged: true))
        base.api.setSubscription("tok-2", base.purchase(acknowledged: true))
        let url = URL(string: "http://127.0.0.1:\(harness.http.port)\(GoogleAdapter.notificationPath)")!
        let bearer = "Bearer " + (try harness.token())
        let first = try harness.body(messageID: "m-1", harness.subscriptionNotification(2, token: "tok-1"))
        let second = try harness.body(messageID: "m-2", harness.subscriptionNotification(2, token: "tok-2"))
        let gate = base.api.hold("get tok-1")
        #expect(try await exchange(url, body: first, authorization: bearer).status == 204)
        await gate.arrival()
        #expect(base.metric("notification_backlog") == 1)
        let refused = try await exchange(url, body: second, authorization: bearer)
        #expect(refused.status == 503 && refused.retryAfter == "10")
        #expect(refused.body["reason"] as? String == "backlog")
        #expect(refused.body["retry_after_seconds"] as? Int == 10)
        #expect(
            refused.body["status"] as? String
                == "overloaded: 1 notifications are waiting to be processed; deliver again in 10 s")
        #expect(base.metric(#"notifications_shed_total{reason="backlog",store="google"}"#) == 1)
        #expect(base.metric(#"notifications_shed_total{reason="recording",store="google"}"#) == 0)
        #expect(try await base.ledger.allInboxIDs(.google) == ["m-1"])
        #expect(base.metric("notifications_received_total") == 1)
        gate.open()
        await base.adapter.processingIdle()
        #expect(base.metric("notification_backlog") == 0)
        #expect(try await exchange(url, body: second, authorization: bearer).status == 204)
        await base.adapter.processingIdle()
        #expect(base.metric("notifications_processed_total") == 2)
        let history = try await base.ledger.getHistory(GetHistoryRequest(key: base.key("tok-2")))
        #expect(history.events.map(\.notificationID) == ["m-2"])
        #expect(base.metric(#"notifications_shed_total{reason="backlog",store="google"}"#) == 1)
        await harness.stop()
    }

    @Test(
        "App Store: above the backlog bound a notification is 503 with Retry-After and nothing is recorded; once drained, it is"
    )
    func appleSheds() async throws {
        let harness = try await AppleAdapterHarness(admission: .init(backlog: 1, recording: 1))
        for (original, id) in [("2000000001", "2000000009"), ("2000000002", "2000000019")] {
            harness.api.set(
                original,
                .init(
                    transaction: harness.transaction(original: original, id: id),
                    renewal: harness.renewal(original: original), status: 1))
        }
        // Without a status the notification is not the whole state: its processing asks the
        // App Store, where the test holds it.
        func payload(_ uuid: String, original: String, id: String) throws -> Data {
            let signed = try harness.notification(
                uuid: uuid, type: "DID_RENEW", transaction: harness.transaction(original: original, id: id),
                renewal: harness.renewal(original: original), status: nil)
            return try JSONSerialization.data(withJSONObject: ["signedPayload": signed])
        }
        let first = try payload("11111111-1111-4111-8111-111111111111", original: "2000000001", id: "2000000009")
        let second = try payload("22222222-2222-4222-8222-222222222222", original: "2000000002", id: "2000000019")
        let url = URL(string: "http://127.0.0.1:\(harness.http.port)\(AppleAdapter.notificationPath(.sandbox))")!
        let gate = harness.api.hold("allSubscriptionStatuses")
        #expect(try await exchange(url, body: first).status == 200)
        await gate.arrival()
        let refused = try await exchange(url, body: second)
        #expect(refused.status == 503 && refused.retryAfter == "10")
        #expect(refused.body["reason"] as? String == "backlog")
        #expect(harness.metric(#"notifications_shed_total{reason="backlog",store="apple"}"#) == 1)
        #expect(try await harness.ledger.allInboxIDs(.apple) == ["11111111-1111-4111-8111-111111111111"])
        gate.open()
        await harness.adapter.processingIdle()
        #expect(try await exchange(url, body: second).status == 200)
        await harness.adapter.processingIdle()
        #expect(harness.metric("notifications_processed_total") == 2)
        let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000002")
        #expect(try await harness.history(key).map(\.notificationID) == ["22222222-2222-4222-8222-222222222222"])
        await harness.stop()
    }
}
