import Foundation
import SubctlKit
import Testing

@Suite("MessageCatalog: methods and messages from the generated descriptors")
struct MessageCatalogTests {
    let catalog = MessageCatalog.standard

    /// One `rpc` line of a .proto file.
    struct ProtoMethod: Hashable {
        var fullName: String
        var input: String
        var output: String
        var clientStreaming: Bool
        var serverStreaming: Bool
    }

    /// The methods and message names declared in proto/, read from the text of the files.
    static func readProtoFiles() throws -> (methods: [ProtoMethod], messages: Set<String>) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("proto")
        let files = try FileManager.default.subpathsOfDirectory(atPath: root.path)
            .filter { $0.hasSuffix(".proto") }.sorted()
        #expect(files.count == 6)
        var methods: [ProtoMethod] = []
        var messages: Set<String> = []
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n").map {
                    $0.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false)[0]
                }
                .joined(separator: "\n")
            let package = try #require(text.firstMatch(of: /package\s+([\w.]+)\s*;/)).1
            let qualify = { (name: Substring) in name.contains(".") ? String(name) : "\(package).\(name)" }
            for match in text.matches(of: /(?m)^message\s+(\w+)/) { messages.insert(qualify(match.1)) }
            for service in text.matches(of: /service\s+(\w+)\s*\{([^}]*)\}/) {
                let rpc = /rpc\s+(\w+)\s*\(\s*(stream\s+)?([\w.]+)\s*\)\s*returns\s*\(\s*(stream\s+)?([\w.]+)\s*\)/
                for match in service.2.matches(of: rpc) {
                    methods.append(
                        ProtoMethod(
                            fullName: "\(package).\(service.1)/\(match.1)", input: qualify(match.3),
                            output: qualify(match.5), clientStreaming: match.2 != nil, serverStreaming: match.4 != nil))
                }
            }
        }
        return (methods, messages)
    }

    @Test func streamingSetMatchesTheStreamKeywordsOfTheProtoFiles() throws {
        let declared = try Self.readProtoFiles().methods
        #expect(Set(declared.filter(\.serverStreaming).map(\.fullName)) == MessageCatalog.serverStreamingMethods)
        #expect(declared.filter(\.clientStreaming).isEmpty)
        #expect(
            MessageCatalog.serverStreamingMethods
                == ["subscriptions.ledger.v1.Ledger/Snapshot", "subscriptions.ledger.v1.Ledger/WatchChanges"])
    }

    @Test func everyDeclaredMethodAndMessageIsInTheCatalog() throws {
        let (declared, messages) = try Self.readProtoFiles()
        let catalogued = catalog.methods.map {
            ProtoMethod(
                fullName: $0.fullName, input: $0.inputType, output: $0.outputType, clientStreaming: false,
                serverStreaming: $0.isServerStreaming)
        }
        #expect(Set(catalogued) == Set(declared))
        #expect(catalog.methods.count == 55)
        #expect(Set(catalog.messages.map(\.fullName)) == messages)
    }

    @Test func methodLookupAcceptsFullServiceAndBareNames() throws {
        let expected = CatalogMethod(
            serviceFullName: "subscriptions.ledger.v1.Ledger", serviceName: "Ledger", name: "GetSubscription",
            inputType: "subscriptions.ledger.v1.GetSubscriptionRequest",
            outputType: "subscriptions.ledger.v1.GetSubscriptionResponse", isServerStreaming: false)
        #expect(expected.fullName == "subscriptions.ledger.v1.Ledger/GetSubscription")
        #expect(try catalog.method(named: "subscriptions.ledger.v1.Ledger/GetSubscription") == expected)
        #expect(try catalog.method(named: "Ledger/GetSubscription") == expected)
        #expect(try catalog.method(named: "GetSubscription") == expected)
        #expect(try catalog.method(named: "WatchChanges").isServerStreaming)
        #expect(
            try catalog.method(named: "Entitlement/Health").fullName
                == "subscriptions.entitlement.v1.Entitlement/Health")
        #expect(
            try catalog.method(named: "subscriptions.verifier.v1.Verifier/Health").outputType
                == "subscriptions.common.v1.HealthResponse")
    }

    @Test func healthNeedsTheService() {
        let error = #expect(throws: SubctlError.self) { try catalog.method(named: "Health") }
        #expect(
            error?.description
                == "INVALID_ARGUMENT: method Health is ambiguous: subscriptions.verifier.v1.Verifier/Health, "
                + "subscriptions.ledger.v1.Ledger/Health, subscriptions.entitlement.v1.Entitlement/Health; "
                + "name the service too, as in Verifier/Health")
        #expect(error?.code.exitCode == 2)
    }

    @Test(arguments: ["getSubscription", "Verifier/GetSubscription", "ledger.v1.Ledger/GetSubscription", "Ledger/"])
    func unknownMethodsAreNotFound(name: String) {
        let error = #expect(throws: SubctlError.self) { try catalog.method(named: name) }
        #expect(error?.description == "NOT_FOUND: no method \(name) (subctl methods lists them)")
    }

    @Test func messagesCarryFieldsInNumberOrderWithJSONNames() throws {
        let message = try #require(catalog.messages(matching: "RecordVerifiedStateRequest").first)
        #expect(
            message.fields == [
                .init(
                    name: "idempotency_key", jsonName: "idempotencyKey", number: 1, typeName: "string", kind: .scalar,
                    isRepeated: false),
                .init(
                    name: "subscription", jsonName: "subscription", number: 2,
                    typeName: "subscriptions.common.v1.Subscription", kind: .message, isRepeated: false),
                .init(
                    name: "events", jsonName: "events", number: 3, typeName: "subscriptions.common.v1.LifecycleEvent",
                    kind: .message, isRepeated: true),
                .init(
                    name: "notification_id", jsonName: "notificationId", number: 4, typeName: "string", kind: .scalar,
                    isRepeated: false),
                .init(
                    name: "periods", jsonName: "periods", number: 5, typeName: "subscriptions.common.v1.Period",
                    kind: .message, isRepeated: true),
                .init(
                    name: "partial", jsonName: "partial", number: 6, typeName: "bool", kind: .scalar,
                    isRepeated: false),
            ])
        #expect(
            catalog.enums(matching: "subscriptions.common.v1.Store").first?.values.map(\.name) == [
                "STORE_UNSPECIFIED", "STORE_APPLE", "STORE_GOOGLE", "STORE_PROMOTIONAL",
            ])
    }
}
