import Foundation
import Model
import ServiceProcessKit
import Testing
import Wire

@testable import EntitlementService

/// The events sent out: their types, access events over changes and time, the Standard Webhooks
/// signature, and the endpoints file (the events of a feed change: WireTests' FeedEventsTests).
@Suite("Events: types, feed events, access events, signatures, endpoints")
struct EventsTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_790_000_000_000
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000001")

    @Test("every lifecycle kind has a dotted name; patterns choose by name, by prefix and .*, or all")
    func types() {
        let names = EventKind.allCases.map(EventType.name(of:))
        #expect(names.allSatisfy { $0 == "test" || $0.split(separator: ".").count == 2 })
        for required in [
            "subscription.purchased", "subscription.renewed", "subscription.renewal_disabled",
            "subscription.renewal_enabled", "subscription.product_change_scheduled",
            "subscription.product_change_applied", "subscription.billing_issue", "subscription.grace_period_started",
            "subscription.billing_recovered", "subscription.account_hold", "subscription.paused",
            "subscription.resumed", "subscription.expired", "subscription.refunded", "subscription.refund_reversed",
            "subscription.revoked", "subscription.transferred", "subscription.linked", "grant.created",
            "grant.revoked", "account.merged", "account.deleted",
        ] {
            #expect(names.contains(required), "\(required)")
        }
        #expect(EventType.matches("access.ended", ["access.*"]))
        #expect(EventType.matches("subscription.renewed", ["access.*", "subscription.renewed"]))
        #expect(!EventType.matches("subscription.renewal_disabled", ["subscription.renewed"]))
        #expect(!EventType.matches("accessx.ended", ["access.*"]))
        #expect(EventType.matches("grant.created", []) && EventType.matches("grant.created", ["*"]))
        #expect(EventType.isValidPattern("access.*") && EventType.isValidPattern("account.deleted"))
        #expect(!EventType.isValidPattern("acces.*") && !EventType.isValidPattern("subscription.renew"))
    }

    @Test("access events: granted, extended, ended by a change; ended by time alone at the announced end")
    func accessEvents() {
        var tracker = AccessEventTracker()
        let end = Self.t0 + 30 * Self.day
        var events = tracker.observe(
            account: "a", position: 1, at: Self.t0, access: ["pro": .allowed(until: end, key: Self.key)])
        #expect(events.map(\.type) == ["access.granted"])
        #expect(events.first?.accessUntilMilliseconds == end && events.first?.capability == "pro")
        #expect(
            events.first?.id
                == AccessEventTracker.id(position: 1, type: "access.granted", account: "a", capability: "pro"))
        // The same access again says nothing.
        #expect(
            tracker.observe(
                account: "a", position: 2, at: Self.t0 + 1, access: ["pro": .allowed(until: end, key: Self.key)]
            )
            .isEmpty)
        // A renewal moves the end.
        events = tracker.observe(
            account: "a", position: 3, at: end - 1, access: ["pro": .allowed(until: end + 30 * Self.day, key: Self.key)]
        )
        #expect(
            events.map(\.type) == ["access.extended"] && events.first?.accessUntilMilliseconds == end + 30 * Self.day)
        // Cancelled: no change comes at the end; time alone ends it, at the end, once.
        #expect(tracker.due(now: end + 30 * Self.day - 1).isEmpty)
        #expect(tracker.nextEnd() == end + 30 * Self.day)
        events = tracker.due(now: end + 40 * Self.day)
        #expect(events.map(\.type) == ["access.ended"] && events.first?.reason == "expired")
        #expect(events.first?.recordedTimeMilliseconds == end + 30 * Self.day && events.first?.position == 3)
        #expect(tracker.due(now: end + 50 * Self.day).isEmpty && tracker.nextEnd() == nil)
        // A revocation ends it at once; a capability nothing grants any more ends as unlinked.
        _ = tracker.observe(
            account: "b", position: 4, at: Self.t0,
            access: ["pro": .allowed(until: nil, key: Self.key), "extra": .allowed(until: nil, key: Self.key)])
        events = tracker.observe(
            account: "b", position: 5, at: Self.t0 + 1, access: ["pro": .denied(reason: "revoked")])
        #expect(events.map(\.capability) == ["extra", "pro"] && events.map(\.reason) == ["unlinked", "revoked"])
        #expect(tracker.count == 0)
    }

    @Test("access events replayed over the same changes and times are the same events with the same ids")
    func accessEventsReplay() {
        func run() -> [Event] {
            var tracker = AccessEventTracker()
            var events: [Event] = []
            for account in 0..<50 {
                let at = Self.t0 + Int64(account) * 1000
                events += tracker.due(now: at)
                events += tracker.observe(
                    account: "acct-\(account)", position: UInt64(account + 1), at: at,
                    access: ["pro": .allowed(until: at + Int64(account % 7) * Self.day + Self.day, key: Self.key)])
            }
            events += tracker.due(now: Self.t0 + 30 * Self.day)
            return events
        }
        let first = run()
        #expect(first.count == 100 && first == run())
        #expect(Set(first.map(\.id)).count == 100)
        let ends = first.filter { $0.type == "access.ended" }.compactMap(\.recordedTimeMilliseconds)
        #expect(ends == ends.sorted())
    }

    static let secret = "whsec_" + Data((0..<32).map { UInt8($0) }).base64EncodedString()

    @Test(
        "a signature is v1 and base64 HMAC-SHA256 over id.timestamp.body; two secrets sign twice; bad secrets are refused"
    )
    func signatures() throws {
        let first = try WebhookSecret(Self.secret)
        let second = try WebhookSecret("whsec_" + Data(repeating: 7, count: 24).base64EncodedString())
        let body = Array(#"{"type":"test"}"#.utf8)
        let header = WebhookSecret.header([first, second], id: "evt_1_0", timestamp: 1_790_000_000, body: body)
        let entries = header.split(separator: " ")
        #expect(entries.count == 2 && entries.allSatisfy { $0.hasPrefix("v1,") && $0.count == 3 + 44 })
        #expect(first.verifies(header: header, id: "evt_1_0", timestamp: 1_790_000_000, body: body))
        #expect(second.verifies(header: header, id: "evt_1_0", timestamp: 1_790_000_000, body: body))
        #expect(!first.verifies(header: header, id: "evt_1_0", timestamp: 1_790_000_001, body: body))
        #expect(!first.verifies(header: header, id: "evt_1_0", timestamp: 1_790_000_000, body: body + [0x20]))
        #expect(first.description == "whsec_…(32 bytes)")
        for (text, message) in [
            ("secret", "a secret must start with whsec_"), ("whsec_***", "a secret is not base64 after whsec_"),
            (
                "whsec_" + Data(repeating: 1, count: 8).base64EncodedString(),
                "a secret's key is 8 bytes; 24 to 64 are allowed"
            ),
        ] {
            #expect(throws: WebhookConfigError(message)) { try WebhookSecret(text) }
        }
    }

    @Test("PyPI's standardwebhooks verifies our signatures, with either of two secrets, and refuses a changed body")
    func pythonVerifier() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let python = root.appendingPathComponent(".build/python/bin/python3")
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/python-env")
        let other = "whsec_" + Data(repeating: 9, count: 40).base64EncodedString()
        let secrets = [try WebhookSecret(Self.secret), try WebhookSecret(other)]
        let body = #"{"id":"evt_7_0","type":"subscription.renewed","accountId":"acct-ü"}"#
        let timestamp = Int64(Date().timeIntervalSince1970)
        let headers = [
            "webhook-id": "evt_7_0", "webhook-timestamp": String(timestamp),
            "webhook-signature": WebhookSecret.header(
                secrets, id: "evt_7_0", timestamp: timestamp, body: Array(body.utf8)),
        ]
        let deliveries: [[String: Any]] = [
            ["secret": Self.secret, "headers": headers, "body": body],
            ["secret": other, "headers": headers, "body": body],
            ["secret": Self.secret, "headers": headers, "body": body + " "],
        ]
        let result = try await runCommand(
            python, [root.appendingPathComponent("Tests/Python/verify_webhooks.py").path],
            input: try JSONSerialization.data(withJSONObject: deliveries))
        try #require(result.status == 0, "verify_webhooks.py: \(result.errors)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].contains(#""ok": {"#) && lines[0].contains("subscription.renewed"))
        #expect(lines[1] == lines[0])
        #expect(lines[2].hasPrefix(#"{"error": "#))
    }

    @Test("the endpoints file: a good one read whole; each fault refused with where it is")
    func endpointsFile() throws {
        let good = """
            {"endpoints": [
              {"name": "crm", "url": "https://crm.example.com/hooks", "secrets": ["\(Self.secret)"],
               "types": ["access.*", "subscription.renewed"], "account_prefix": "eu-"},
              {"name": "warehouse", "url": "http://10.0.0.7:8080/in", "secrets": ["\(Self.secret)", "\(Self.secret)"]}
            ]}
            """
        let endpoints = try WebhookEndpoints.parse(Array(good.utf8))
        #expect(endpoints.map(\.name) == ["crm", "warehouse"])
        #expect(endpoints[0].wants(type: "access.ended", account: "eu-7"))
        #expect(!endpoints[0].wants(type: "access.ended", account: "us-7"))
        #expect(!endpoints[0].wants(type: "subscription.expired", account: "eu-7"))
        #expect(endpoints[1].wants(type: "account.deleted", account: nil) && endpoints[1].secrets.count == 2)
        let entry = #"{"name": "crm", "url": "https://crm.example.com", "secrets": ["\#(Self.secret)"]}"#
        let faults: [(String, String)] = [
            ("[]", "the endpoints file must be a JSON object with \"endpoints\""),
            ("{\"endpoints\": [], \"extra\": 1}", "the file has an unknown field \"extra\""),
            ("{\"endpoints\": [\(entry), \(entry)]}", "endpoints[1].name \"crm\" is used twice"),
            (
                #"{"endpoints": [{"name": "Crm", "url": "https://x", "secrets": []}]}"#,
                "endpoints[0].name must be 1 to 64 of a-z, 0-9, _ and -"
            ),
            (
                #"{"endpoints": [{"name": "c", "url": "ftp://x", "secrets": []}]}"#,
                "endpoints[0].url must be an http or https URL with a host and no credentials"
            ),
            (
                #"{"endpoints": [{"name": "c", "url": "https://u:p@x", "secrets": []}]}"#,
                "endpoints[0].url must be an http or https URL with a host and no credentials"
            ),
            (
                #"{"endpoints": [{"name": "c", "url": "https://x", "secrets": []}]}"#,
                "endpoints[0].secrets must list 1 or 2 secrets"
            ),
            (
                #"{"endpoints": [{"name": "c", "url": "https://x", "secrets": ["whsec_AAAA"]}]}"#,
                "endpoints[0].secrets[0]: a secret's key is 3 bytes; 24 to 64 are allowed"
            ),
            (
                "{\"endpoints\": [{\"name\": \"c\", \"url\": \"https://x\", \"secrets\": [\"\(Self.secret)\"], \"types\": [\"renewed\"]}]}",
                "endpoints[0].types[0] is not an event type or a prefix with .* (subscription.*, access.ended)"
            ),
            (
                "{\"endpoints\": [{\"name\": \"c\", \"url\": \"https://x\", \"secrets\": [\"\(Self.secret)\"], \"hmac\": 1}]}",
                "endpoints[0] has an unknown field \"hmac\""
            ),
            ("not json", "the endpoints file is not JSON"),
        ]
        for (text, message) in faults {
            #expect(throws: WebhookConfigError(message), "\(text)") { try WebhookEndpoints.parse(Array(text.utf8)) }
        }
        // The secret itself is never in a message.
        do {
            _ = try WebhookEndpoints.parse(
                Array(#"{"endpoints": [{"name": "c", "url": "https://x", "secrets": ["whsec_c2VjcmV0"]}]}"#.utf8))
        } catch {
            #expect(!error.description.contains("c2VjcmV0"))
        }
    }
}
