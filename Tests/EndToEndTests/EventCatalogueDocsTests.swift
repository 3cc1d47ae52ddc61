import AppStore
import Foundation
import GooglePlay
import LedgerService
import Model
import Observability
import ProtoJSON
import RPC
import ServiceProcessKit
import Sockets
import TestSupport
import Testing
import Wire

@testable import EntitlementService

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `docs/events-and-webhooks.md` held to the code: its catalogue names every event type there is
/// and no other; each example body has exactly the keys the webhook encoder writes for an event
/// of each type that points to it (the event made the way its source makes it: the store's
/// notification type mapped by the store's lifecycle, the ledger's link and account events, the
/// access tracker); and its Python verifier, run with `python3`, accepts what the service signs
/// and refuses a tampered body or another secret.
@Suite("Docs: the event catalogue, its webhook bodies and the Python verifier")
struct EventCatalogueDocsTests {
    static let secret = "whsec_" + Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()
    static let otherSecret = "whsec_" + Data((0..<32).map { UInt8($0 * 5 % 256) }).base64EncodedString()

    static func page() throws -> ManualPage { try ManualPage("docs/events-and-webhooks.md") }

    /// The catalogue's rows: each type and the name of the example its body is shaped like (nil
    /// for a type no source sends).
    static func catalogue() throws -> [(type: String, example: String?)] {
        let section = try #require(try page().section("The event catalogue"), "no catalogue")
        let rows = try #require(section.table(with: ["type", "sent when", "body"]), "no catalogue table")
        return try rows.map { row in
            let type = try #require(ManualPage.codeSpans(row["type"] ?? "").first, "\(row)")
            let body = row["body"] ?? ""
            guard body.hasPrefix("[") else { return (type, nil) }
            return (type, String(body.dropFirst().prefix { $0 != "]" }))
        }
    }

    /// The example bodies, by name (the heading `Example: <name>`), parsed.
    static func examples() throws -> [String: [String: Any]] {
        let section = try #require(try page().section("Webhook bodies"), "no section Webhook bodies")
        var examples: [String: [String: Any]] = [:]
        for heading in section.headings where heading.title.hasPrefix("Example: ") {
            let name = String(heading.title.dropFirst("Example: ".count))
            let block = try #require(section.section(heading.title)?.blocks("json").first, "no JSON under \(name)")
            examples[name] = try #require(
                try JSONSerialization.jsonObject(with: Data(block.utf8)) as? [String: Any], "\(name) is no object")
        }
        return examples
    }

    /// Every type the service can log.
    static var eventTypes: Set<String> {
        Set(EventKind.allCases.map(EventType.name(of:))).union([
            EventType.accessGranted, EventType.accessExtended, EventType.accessEnded, EventType.test,
        ])
    }

    @Test("the catalogue lists every event type the code defines, once, and none other")
    func everyType() throws {
        let listed = try Self.catalogue().map(\.type)
        #expect(Set(listed) == Self.eventTypes)
        #expect(listed.count == Set(listed).count, "a type is listed twice")
    }

    // MARK: Where an event comes from

    /// The source that makes events shaped like an example, read from the example.
    enum Source: Equatable {
        case apple(subtype: Bool)
        case google, fetched, voided
        /// An operator's action at a store, read back from it (`storeType` API with the action).
        case action
        case claim(other: Bool)
        case grant, merge, deletion
        case access(ended: Bool)
        case test

        init?(_ example: [String: Any]) {
            let type = example["type"] as? String ?? ""
            let storeType = example["storeType"] as? String
            if type.hasPrefix("access.") {
                self = .access(ended: type == EventType.accessEnded)
            } else if type == EventType.test {
                self = .test
            } else if type.hasPrefix("account.") {
                self = example["accountId"] == nil ? .deletion : .merge
            } else if type.hasPrefix("grant.") {
                self = .grant
            } else if let storeType {
                if storeType == "API" {
                    self = example["storeSubtype"] == nil ? .fetched : .action
                } else if storeType == "VOIDED_PURCHASE" {
                    self = .voided
                } else if AppleNotificationType(rawValue: storeType).isKnown {
                    self = .apple(subtype: example["storeSubtype"] != nil)
                } else if storeType.hasPrefix("SUBSCRIPTION_") {
                    self = .google
                } else {
                    return nil
                }
            } else {
                self = .claim(other: example["otherAccountId"] != nil)
            }
        }
    }

    /// What a source records for an event of `type`: the kind, and the store's type and
    /// subtype; nil when the source never sends that type.
    static func origin(of type: String, from source: Source) -> (kind: EventKind, storeType: String?, subtype: String?)?
    {
        func named(_ kind: EventKind) -> Bool { EventType.name(of: kind) == type }
        switch source {
        case .apple(let subtype):
            let subtypes: [AppleNotificationSubtype?] = subtype ? AppleNotificationSubtype.known : [nil]
            for notification in AppleNotificationType.known {
                for sub in subtypes {
                    let kind = AppleLifecycle.eventKind(type: notification, subtype: sub)
                    if named(kind) { return (kind, notification.rawValue, sub?.rawValue) }
                }
            }
            return nil
        case .google:
            for code in 1...30 {
                let kind = GooglePlayLifecycle.eventKind(subscriptionNotificationType: code)
                if let name = SubscriptionNotificationType(rawValue: code).name, named(kind) {
                    return (kind, name, nil)
                }
            }
            return nil
        case .fetched:
            return [EventKind.stateRefreshed, .acknowledged, .imported].first(where: named).map { ($0, "API", nil) }
        case .voided:
            return [EventKind.refunded, .other].first(where: named).map { ($0, "VOIDED_PURCHASE", nil) }
        case .action:
            return named(.storeAction) ? (.storeAction, "API", "EXTEND_RENEWAL_DATE") : nil
        case .claim(let other):
            let kinds: [EventKind] = other ? [.accountTransferred, .other] : [.accountLinked]
            return kinds.first(where: named).map { ($0, nil, nil) }
        case .grant:
            return [EventKind.grantCreated, .grantRevoked].first(where: named).map { ($0, nil, nil) }
        case .merge:
            return named(.accountMerged) ? (.accountMerged, nil, nil) : nil
        case .deletion:
            return named(.accountDeleted) ? (.accountDeleted, nil, nil) : nil
        case .access, .test:
            return nil
        }
    }

    /// Every type some source sends.
    static var sentTypes: Set<String> {
        let sources: [Source] = [
            .apple(subtype: true), .apple(subtype: false), .google, .fetched, .action, .voided, .claim(other: false),
            .claim(other: true), .grant, .merge, .deletion,
        ]
        var sent: Set<String> = [
            EventType.accessGranted, EventType.accessExtended, EventType.accessEnded, EventType.test,
        ]
        for type in eventTypes where sources.contains(where: { origin(of: type, from: $0) != nil }) {
            sent.insert(type)
        }
        return sent
    }

    // MARK: Events made as their sources make them

    static let position: UInt64 = 4812
    static let sequence: UInt64 = 9301

    /// The event of `type` that `source` makes, with the account, times, keys and subscription
    /// the example shows; nil when the source does not send that type.
    static func event(of type: String, like example: [String: Any]) throws -> Event? {
        guard let source = Source(example) else { return nil }
        let account = example["accountId"] as? String
        let other = example["otherAccountId"] as? String
        let storeTime = (example["storeTimeMs"] as? String).flatMap { Int64($0) } ?? 1_767_225_600_000
        let recorded = (example["recordedTimeMs"] as? String).flatMap { Int64($0) } ?? storeTime
        var event: Event?
        switch source {
        case .access(let ended):
            let key = try (example["key"] as? [String: Any]).map { try message(SubscriptionKey.self, $0) }
            let until = (example["accessUntilMs"] as? String).flatMap { Int64($0) }
            let capability = example["capability"] as? String ?? "pro"
            let holder = account ?? "alice"
            var tracker = AccessEventTracker()
            var events = tracker.observe(
                account: holder, position: position - 1, at: recorded - 1,
                access: [capability: .allowed(until: until.map { $0 - 1 }, key: key)])
            switch type {
            case EventType.accessGranted:
                break
            case EventType.accessExtended where !ended:
                events = tracker.observe(
                    account: holder, position: position, at: recorded,
                    access: [capability: .allowed(until: until, key: key)])
            case EventType.accessEnded where ended:
                events = tracker.observe(
                    account: holder, position: position, at: recorded,
                    access: [capability: .denied(reason: example["reason"] as? String ?? "expired")])
            default:
                return nil
            }
            event = events.first { $0.type == type }
        case .test:
            guard type == EventType.test else { return nil }
            // As `LogTestEvent` logs it.
            event = Event(
                id: example["id"] as? String ?? "evt_test_0", type: EventType.test, accountID: account,
                position: position, recordedTimeMilliseconds: recorded)
        case .merge, .deletion:
            guard let origin = origin(of: type, from: source) else { return nil }
            let lifecycle = LifecycleEvent(
                position: position, key: SubscriptionKey.accountEvents, kind: origin.kind,
                storeTimeMilliseconds: storeTime,
                verifiedTimeMilliseconds: storeTime, accountID: account, otherAccountID: other)
            event =
                FeedEvents.events(
                    of: Change(
                        position: position, committedTimeMilliseconds: recorded, kind: .account, events: [lifecycle])
                ).first
        default:
            guard let origin = origin(of: type, from: source) else { return nil }
            let subscription = try message(
                Subscription.self, try #require(example["subscription"] as? [String: Any], "no subscription"))
            let lifecycle = LifecycleEvent(
                position: position, key: subscription.key, kind: origin.kind, storeTimeMilliseconds: storeTime,
                verifiedTimeMilliseconds: recorded, accountID: account, otherAccountID: other,
                storeType: origin.storeType, storeSubtype: origin.subtype, state: subscription.state)
            let kind: ChangeKind =
                source == .claim(other: false) || source == .claim(other: true) ? .link : .subscription
            event =
                FeedEvents.events(
                    of: Change(
                        position: position, committedTimeMilliseconds: recorded, kind: kind, subscription: subscription,
                        events: [lifecycle])
                ).first
        }
        event?.sequence = sequence
        return event
    }

    /// `json` (one of the page's objects) as the message it is, through the proto3 JSON parser.
    static func message<Message: ProtoMessage>(_ type: Message.Type, _ json: [String: Any]) throws -> Message {
        let bytes = try JSONSerialization.data(withJSONObject: json)
        return try Message(serialized: ProtoJSON.encode(json: Array(bytes), as: Message.protoName))
    }

    /// Every key path of a JSON value: `a`, `a.b`, and `a[].c` through arrays.
    static func keyPaths(_ value: Any, prefix: String = "") -> Set<String> {
        var paths: Set<String> = []
        if let object = value as? [String: Any] {
            for (key, inner) in object {
                let path = prefix.isEmpty ? key : "\(prefix).\(key)"
                paths.insert(path)
                paths.formUnion(keyPaths(inner, prefix: path))
            }
        } else if let array = value as? [Any] {
            for inner in array { paths.formUnion(keyPaths(inner, prefix: prefix + "[]")) }
        }
        return paths
    }

    static func deliverer(secrets: [String]) throws -> WebhookDeliverer {
        let list = secrets.map { "\"\($0)\"" }.joined(separator: ", ")
        let endpoint = try #require(
            try WebhookEndpoints.parse(
                Array(
                    #"{"endpoints": [{"name": "crm", "url": "http://127.0.0.1:9/hooks", "secrets": [\#(list)]}]}"#.utf8)
            ).first)
        // Never called: the test only asks the deliverer for its requests.
        let ledger = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: 9)])
        return WebhookDeliverer(
            endpoint: endpoint, client: ledger, owner: "docs", logger: Logger(service: "docs", sink: .capturing()))
    }

    /// The body and headers the deliverer sends for `event` now.
    static func delivery(_ event: Event, _ deliverer: WebhookDeliverer) async -> (body: Data, headers: [String: String])
    {
        let request = await deliverer.request(event, at: Int64(Date().timeIntervalSince1970 * 1000))
        var headers: [String: String] = [:]
        for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            headers[name] = request.value(forHTTPHeaderField: name)
        }
        return (request.httpBody ?? Data(), headers)
    }

    @Test("each example body has exactly the keys the encoder writes for every type that points to it")
    func exampleBodies() async throws {
        let examples = try Self.examples()
        let deliverer = try Self.deliverer(secrets: [Self.secret])
        var used: Set<String> = []
        let sent = Self.sentTypes
        for (type, name) in try Self.catalogue() {
            guard let name else {
                #expect(!sent.contains(type), "\(type) is sent, but the catalogue shows no body for it")
                continue
            }
            used.insert(name)
            let example = try #require(examples[name], "\(type): no example \(name)")
            guard let event = try Self.event(of: type, like: example) else {
                Issue.record("\(type) does not come from the source of the example \(name)")
                continue
            }
            let (body, _) = await Self.delivery(event, deliverer)
            let sentBody = try JSONSerialization.jsonObject(with: body)
            let want = Self.keyPaths(sentBody)
            let shown = Self.keyPaths(example)
            #expect(
                shown == want,
                "\(type) as \(name): the page shows \(shown.subtracting(want).sorted()) too, lacks \(want.subtracting(shown).sorted())"
            )
        }
        #expect(used == Set(examples.keys), "examples no type points to: \(Set(examples.keys).subtracting(used))")
        // Each example is an event of its own type.
        for (name, example) in examples {
            let type = example["type"] as? String ?? ""
            #expect(try Self.catalogue().contains { $0.type == type && $0.example == name }, "\(name) shows \(type)")
        }
    }

    @Test("the Python verifier accepts what the service signs, and refuses a tampered body or another secret")
    func pythonVerifier() async throws {
        let section = try #require(try Self.page().section("Verifying a delivery"), "no section Verifying a delivery")
        let snippet = try #require(section.blocks("python").first, "no Python verifier")
        #expect(snippet.split(separator: "\n").count <= 10)
        // Sign with one secret, then with two (a rotation); the receiver knows one.
        let event = Event(
            id: "evt_4812_0", type: "subscription.renewed", accountID: "alice", position: 4812,
            recordedTimeMilliseconds: 1_767_225_600_000)
        let one = await Self.delivery(event, try Self.deliverer(secrets: [Self.secret]))
        let two = await Self.delivery(event, try Self.deliverer(secrets: [Self.otherSecret, Self.secret]))
        let tampered = Data(
            String(decoding: one.body, as: UTF8.self).replacingOccurrences(of: "alice", with: "mallory").utf8)
        let cases: [(secret: String, headers: [String: String], body: Data, accepted: Bool)] = [
            (Self.secret, one.headers, one.body, true),
            (Self.secret, one.headers, tampered, false),
            (Self.otherSecret, one.headers, one.body, false),
            (Self.secret, two.headers, two.body, true),
        ]
        let input = try JSONSerialization.data(
            withJSONObject: cases.map {
                ["secret": $0.secret, "headers": $0.headers, "body": String(decoding: $0.body, as: UTF8.self)]
            })
        let program =
            snippet + """


                import json, sys
                for case in json.load(sys.stdin):
                    print(verify(case["secret"], case["headers"], case["body"].encode()))
                """
        let result = try await runCommand(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", program], input: input)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.split(separator: "\n").map(String.init) == cases.map { $0.accepted ? "True" : "False" })
    }
}
