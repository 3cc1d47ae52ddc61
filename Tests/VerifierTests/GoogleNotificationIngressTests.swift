import Clients
import Crypto
import Foundation
import GooglePlay
import HTTP
import Model
import Observability
import RPC
import TestSupport
import Testing
import Wire

@testable import VerifierService

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Google RTDN ingress", .serialized)
struct GoogleNotificationIngressTests {
    static let audience = "https://verifier.example.com/google/rtdn"
    static let email = "rtdn-push@example-project.iam.gserviceaccount.com"

    /// The adapter harness plus a push key served as JWKS and the push route on a real HTTP server.
    final class PushHarness: Sendable {
        let base: GoogleAdapterTests.Harness
        let key: PrivateKey
        let http: HTTPServer

        init(admission: NotificationAdmission.Limits = .default) async throws {
            base = try await GoogleAdapterTests.Harness(admission: admission)
            key = try TestRSAKeys.key(0)
            let jwks = JSONWebKeySet(keys: [
                .init(publicKey: try PublicKey(pem: try key.publicKeyPEM()), keyID: "push-key-1")
            ]).json()
            let authenticator = PubSubPushAuthenticator(
                configuration: .init(
                    audience: GoogleNotificationIngressTests.audience,
                    serviceAccountEmail: GoogleNotificationIngressTests.email, keySource: .file("/unused")),
                fetch: { _, _ in jwks })
            // A thread for each of the tests' concurrent pushes, and no idle cut while a loaded
            // machine keeps one waiting.
            http = HTTPServer(
                host: "127.0.0.1", port: 0, timeoutSeconds: 120, threads: 8,
                logger: Logger(service: "test", minimumLevel: .error, sink: .capturing()))
            base.adapter.installNotificationRoute(on: http, authenticator: authenticator)
            try http.start()
        }

        func stop() async {
            http.stop()
            await base.stop()
        }

        /// A push token for the claims, signed by the push key.
        func token(_ changes: [String: any Sendable] = [:]) throws -> String {
            let now = Int64(base.clock.now.timeIntervalSince1970)
            var claims: [String: any Sendable] = [
                "iss": "https://accounts.google.com", "aud": GoogleNotificationIngressTests.audience,
                "email": GoogleNotificationIngressTests.email, "email_verified": true, "iat": now, "exp": now + 3600,
                "sub": "1234567890",
            ]
            claims.merge(changes) { _, new in new }
            let header = try JSONSerialization.data(withJSONObject: ["alg": "RS256", "kid": "push-key-1", "typ": "JWT"])
            let payload = try JSONSerialization.data(withJSONObject: claims)
            return try CompactJWS.sign(header: [UInt8](header), payload: [UInt8](payload), key: key, algorithm: .rs256)
        }

        /// A push body for `notification` (the decoded `data` JSON) under `messageID`.
        func body(
            messageID: String, _ notification: [String: any Sendable], publishTime: String = "2026-11-30T10:00:00Z"
        ) throws -> Data {
            let data = try JSONSerialization.data(withJSONObject: notification).base64EncodedString()
            return try JSONSerialization.data(withJSONObject: [
                "message": ["data": data, "messageId": messageID, "publishTime": publishTime],
                "subscription": "projects/example/subscriptions/play-rtdn",
            ])
        }

        func subscriptionNotification(_ type: Int, token: String, package: String = GoogleAdapterTests.package)
            -> [String: any Sendable]
        {
            [
                "version": "1.0", "packageName": package, "eventTimeMillis": String(base.clock.milliseconds),
                "subscriptionNotification": [
                    "version": "1.0", "notificationType": type, "purchaseToken": token, "subscriptionId": "pro_monthly",
                ] as [String: any Sendable],
            ]
        }

        func post(_ body: Data, authorization: String?) async throws -> Int {
            var request = URLRequest(
                url: URL(string: "http://127.0.0.1:\(http.port)\(GoogleAdapter.notificationPath)")!)
            request.httpMethod = "POST"
            request.httpBody = body
            if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
            return try await loopbackExchange(request).1
        }
    }

    @Test("the same messageId pushed 5 times at once: five 204s, one inbox entry, one fetch, one event")
    func duplicates() async throws {
        let harness = try await PushHarness()
        harness.base.api.setSubscription("tok-rtdn", harness.base.purchase(acknowledged: true))
        let body = try harness.body(
            messageID: "1234567890123456", harness.subscriptionNotification(2, token: "tok-rtdn"))
        let bearer = "Bearer " + (try harness.token())
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await harness.post(body, authorization: bearer) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == [204, 204, 204, 204, 204])
        #expect(harness.base.metric("notifications_received_total") == 1)
        #expect(harness.base.metric("notifications_duplicate_total") == 4)
        #expect(harness.base.metric(#"notification_delivery_lag_seconds_count{stage="recorded",store="google"}"#) == 1)
        await harness.base.adapter.processingIdle()
        #expect(harness.base.metric("notifications_processed_total") == 1)
        #expect(harness.base.metric(#"notification_delivery_lag_seconds_count{stage="processed",store="google"}"#) == 1)
        #expect(harness.base.api.calls == ["get tok-rtdn"])
        let history = try await harness.base.ledger.getHistory(
            GetHistoryRequest(key: harness.base.key("tok-rtdn")))
        #expect(history.events.map(\.kind) == [.renewed])
        #expect(history.events.first?.notificationID == "1234567890123456")
        #expect(history.events.first?.storeType == "SUBSCRIPTION_RENEWED")
        let processed = try await harness.base.ledger.listInbox(ListInboxRequest(status: .processed, store: .google))
        #expect(processed.entries.map(\.notificationID) == ["1234567890123456"])
        #expect(processed.entries.map(\.notificationType) == ["SUBSCRIPTION_RENEWED"])
        await harness.stop()
    }

    @Test(
        "a notification's type is recorded by Google's name, or by its kind and code when Google has not documented it",
        arguments: [
            (
                DeveloperNotification.Kind.subscription(
                    .init(version: "1.0", notificationType: .canceled, purchaseToken: "t", subscriptionId: "s")),
                "SUBSCRIPTION_CANCELED"
            ),
            (
                .subscription(
                    .init(
                        version: "1.0", notificationType: .init(rawValue: 99), purchaseToken: "t", subscriptionId: "s")),
                "SUBSCRIPTION_NOTIFICATION_99"
            ),
            (
                .oneTimeProduct(.init(version: "1.0", notificationType: .purchased, purchaseToken: "t", sku: "s")),
                "ONE_TIME_PRODUCT_PURCHASED"
            ),
            (
                .oneTimeProduct(.init(version: "1.0", notificationType: .canceled, purchaseToken: "t", sku: "s")),
                "ONE_TIME_PRODUCT_CANCELED"
            ),
            (
                .oneTimeProduct(
                    .init(version: "1.0", notificationType: .init(rawValue: 7), purchaseToken: "t", sku: "s")),
                "ONE_TIME_PRODUCT_NOTIFICATION_7"
            ),
        ])
    func typeNames(kind: DeveloperNotification.Kind, name: String) {
        #expect(GoogleAdapter.typeName(kind) == name)
    }

    @Test("the inbox entry records the push's authentication as checked: the token's claims and when, not the token")
    func authenticationRecorded() async throws {
        let harness = try await PushHarness()
        harness.base.api.setSubscription("tok-auth", harness.base.purchase(acknowledged: true))
        let body = try harness.body(messageID: "5550001", harness.subscriptionNotification(2, token: "tok-auth"))
        let token = try harness.token()
        #expect(try await harness.post(body, authorization: "Bearer " + token) == 204)
        await harness.base.adapter.processingIdle()
        let entries = try await harness.base.ledger.listInbox(ListInboxRequest(status: .processed, store: .google))
        let issued = Int64(harness.base.clock.now.timeIntervalSince1970) * 1000
        #expect(
            entries.entries.map(\.pushAuthentication) == [
                PushAuthentication(
                    iss: "https://accounts.google.com", email: Self.email, aud: Self.audience, kid: "push-key-1",
                    iatMilliseconds: issued, expMilliseconds: issued + 3_600_000,
                    checkedTimeMilliseconds: harness.base.clock.milliseconds)
            ])
        #expect(!String(decoding: entries.serialized(), as: UTF8.self).contains(token))
        await harness.stop()
    }

    @Test(
        "a renewal's state write marks its inbox entry processed; processed again after a later failure, it ends processed"
    )
    func stateWriteCompletesEntry() async throws {
        let harness = try await PushHarness()
        harness.base.api.setSubscription("tok-once", harness.base.purchase(acknowledged: true))
        let eventTime = harness.base.clock.milliseconds
        let body = try harness.body(messageID: "m-once", harness.subscriptionNotification(2, token: "tok-once"))
        #expect(try await harness.post(body, authorization: "Bearer " + (try harness.token())) == 204)
        await harness.base.adapter.processingIdle()
        /// The entry's status: the inbox is listed by status.
        func status() async throws -> [InboxStatus] {
            var found: [InboxStatus] = []
            for status in [InboxStatus.pending, .processed, .failed] {
                let entries = try await harness.base.ledger.listInbox(ListInboxRequest(status: status, store: .google))
                if entries.entries.contains(where: { $0.notificationID == "m-once" }) { found.append(status) }
            }
            return found
        }
        #expect(try await status() == [.processed])
        // A step after the write failed and marked the entry: processing it again fetches the
        // same state at the same instant, so the write replays, and the entry is marked again.
        _ = try await harness.base.ledger.markInbox(
            MarkInboxRequest(store: .google, notificationID: "m-once", status: .failed, error: "after the write"))
        #expect(try await status() == [.failed])
        await harness.base.adapter.process(
            messageID: "m-once", packageName: GoogleAdapterTests.package, eventTime: eventTime,
            work: .subscription(type: 2, token: "tok-once", productID: "pro_monthly"))
        #expect(try await status() == [.processed])
        let history = try await harness.base.ledger.getHistory(GetHistoryRequest(key: harness.base.key("tok-once")))
        #expect(history.events.map(\.kind) == [.renewed])
        #expect(harness.base.api.calls == ["get tok-once", "get tok-once"])
        await harness.stop()
    }

    @Test("the delivery lag runs from Pub/Sub's publish time to the inbox, then to the state recorded")
    func deliveryLag() async throws {
        let harness = try await PushHarness()
        harness.base.api.setSubscription("tok-lag", harness.base.purchase(acknowledged: true))
        let published = harness.base.iso(harness.base.clock.milliseconds - 90_000)
        let body = try harness.body(
            messageID: "m-lag", harness.subscriptionNotification(2, token: "tok-lag"), publishTime: published)
        #expect(try await harness.post(body, authorization: "Bearer " + (try harness.token())) == 204)
        func lag(_ series: String, _ stage: String, le: String? = nil) -> Double? {
            let labels = le.map { #"le="\#($0)","# } ?? ""
            return harness.base.metric(
                "notification_delivery_lag_seconds_\(series){\(labels)stage=\"\(stage)\",store=\"google\"}")
        }
        #expect(lag("sum", "recorded") == 90)
        #expect(lag("bucket", "recorded", le: "60.0") == 0)
        #expect(lag("bucket", "recorded", le: "300.0") == 1)
        harness.base.clock.advance(seconds: 30)
        await harness.base.adapter.processingIdle()
        #expect(lag("count", "processed") == 1)
        #expect(lag("sum", "processed") ?? 0 >= 90)
        await harness.stop()
    }

    @Test("a notification of a kind this version does not know is recorded, acknowledged with 204 and processed")
    func unknownKind() async throws {
        let harness = try await PushHarness()
        let notification: [String: any Sendable] = [
            "version": "1.0", "packageName": GoogleAdapterTests.package,
            "eventTimeMillis": String(harness.base.clock.milliseconds),
            "futureKindNotification": ["version": "1.0", "purchaseToken": "tok-future"] as [String: any Sendable],
        ]
        let status = try await harness.post(
            try harness.body(messageID: "m-future", notification), authorization: "Bearer " + (try harness.token()))
        #expect(status == 204)
        await harness.base.adapter.processingIdle()
        let processed = try await harness.base.ledger.listInbox(ListInboxRequest(status: .processed, store: .google))
        #expect(processed.entries.map(\.notificationID) == ["m-future"])
        #expect(processed.entries.first?.notificationType == "UNKNOWN")
        #expect(harness.base.api.calls.isEmpty)
        await harness.stop()
    }

    @Test("a push whose token fails any check is 401 and records nothing")
    func unauthenticated() async throws {
        let harness = try await PushHarness()
        let body = try harness.body(messageID: "m-401", harness.subscriptionNotification(4, token: "tok-x"))
        let now = Int64(harness.base.clock.now.timeIntervalSince1970)
        let other = try TestRSAKeys.key(1)
        let foreign = try CompactJWS.sign(
            header: [UInt8](try JSONSerialization.data(withJSONObject: ["alg": "RS256", "kid": "push-key-1"])),
            payload: [UInt8](
                try JSONSerialization.data(withJSONObject: [
                    "iss": "https://accounts.google.com", "aud": Self.audience, "email": Self.email,
                    "email_verified": true,
                    "iat": now, "exp": now + 3600,
                ])), key: other, algorithm: .rs256)
        let headers: [String?] = [
            nil, "Basic abc", "Bearer not-a-jwt", "Bearer " + foreign,
            "Bearer " + (try harness.token(["aud": "https://other"])),
            "Bearer " + (try harness.token(["iss": "https://evil.example.com"])),
            "Bearer " + (try harness.token(["email": "someone@example.com"])),
            "Bearer " + (try harness.token(["email_verified": false])),
            "Bearer " + (try harness.token(["iat": now - 7200, "exp": now - 3600])),
        ]
        for header in headers {
            #expect(try await harness.post(body, authorization: header) == 401, "\(header?.prefix(20) ?? "no header")")
        }
        #expect(try await harness.base.ledger.allInboxIDs(.google).isEmpty)
        #expect(harness.base.api.calls.isEmpty)
        #expect(
            harness.base.metric(#"notification_validation_failures_total{reason="authentication",store="google"}"#)
                == Double(headers.count))
        await harness.stop()
    }

    @Test("a notification for a package not served here is acknowledged, sampled in memory, and writes nothing")
    func otherPackage() async throws {
        let harness = try await PushHarness()
        let body = try harness.body(
            messageID: "m-pkg", harness.subscriptionNotification(4, token: "tok-y", package: "com.other.app"))
        #expect(try await harness.post(body, authorization: "Bearer " + (try harness.token())) == 204)
        let rejected = try await harness.base.ledger.listInbox(ListInboxRequest(status: .rejected, store: .google))
        #expect(rejected.entries.isEmpty)
        let samples = harness.base.adapter.ingress.recentSamples["google/wrong_app"] ?? []
        #expect(samples.map(\.message) == ["package com.other.app is not served here"])
        #expect(
            harness.base.metric(#"notification_validation_failures_total{reason="bundle_or_package",store="google"}"#)
                == 1)
        #expect(harness.base.api.calls.isEmpty)
        await harness.stop()
    }
}
