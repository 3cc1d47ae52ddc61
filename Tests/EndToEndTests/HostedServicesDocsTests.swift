import Foundation
import Model
import TestSupport
import Testing
import Wire

/// `docs/coming-from-hosted-services.md` held to the code: every method it names (as an HTTP
/// path in its tables, or by name anywhere on the page) is a method the services serve over
/// HTTP, and every event type in its tables is one the service logs.
@Suite("Docs: coming from RevenueCat or Adapty")
struct HostedServicesDocsTests {
    static let path = "docs/coming-from-hosted-services.md"

    /// The unary methods of the three services, by full name (`pkg.Service/Method`): those
    /// served over HTTP.
    static var unaryMethods: Set<String> {
        let methods: [any RPCMethod] = VerifierRPC.methods + LedgerRPC.methods + EntitlementRPC.methods
        return Set(methods.filter { !$0.isServerStreaming }.map(\.name))
    }

    static var eventTypes: Set<String> {
        Set(EventKind.allCases.map(EventType.name(of:))).union([
            EventType.accessGranted, EventType.accessExtended, EventType.accessEnded, EventType.test,
        ])
    }

    /// Whether `text` reads as one of this system's event types: `test`, or a dotted lowercase
    /// name under one of the four prefixes.
    static func looksLikeEventType(_ text: String) -> Bool {
        if text == EventType.test { return true }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, ["subscription", "access", "grant", "account"].contains(parts[0]) else { return false }
        return !parts[1].isEmpty && parts[1].allSatisfy { ("a"..."z").contains($0) || $0 == "_" }
    }

    @Test("every HTTP path in the page's tables is a unary method's, and every event type one the service logs")
    func tablesNameRealMethodsAndEvents() throws {
        let page = try ManualPage(Self.path)
        let methods = Self.unaryMethods
        let tables = page.tables.filter { $0.first?["here"] != nil }
        #expect(tables.count == 3, "the concepts, events and calls tables")
        var paths = 0
        var events = 0
        for row in tables.joined() {
            for span in ManualPage.codeSpans(row["here"] ?? "") {
                if span.hasPrefix("POST /") {
                    paths += 1
                    #expect(methods.contains(String(span.dropFirst("POST /".count))), "no unary method \(span)")
                } else if span.contains("/") {
                    Issue.record("a path that is no POST of a method: \(span)")
                } else if Self.looksLikeEventType(span) {
                    events += 1
                    #expect(Self.eventTypes.contains(span), "no event type \(span)")
                }
            }
        }
        #expect(paths >= 10 && events >= 20, "\(paths) paths, \(events) event types")
    }

    @Test("RevenueCat's event types the page maps are all there, each beside one of this system's")
    func revenueCatEvents() throws {
        let page = try ManualPage(Self.path)
        let rows = try #require(
            page.tables.first { rows in
                rows.contains { ManualPage.codeSpans($0["RevenueCat"] ?? "").contains("INITIAL_PURCHASE") }
            })
        var mapped: Set<String> = []
        for row in rows {
            let ours = ManualPage.codeSpans(row["here"] ?? "").filter(Self.looksLikeEventType)
            #expect(!ours.isEmpty, "\(row)")
            mapped.formUnion(ManualPage.codeSpans(row["RevenueCat"] ?? ""))
        }
        for type in [
            "INITIAL_PURCHASE", "RENEWAL", "CANCELLATION", "UNCANCELLATION", "NON_RENEWING_PURCHASE", "EXPIRATION",
            "BILLING_ISSUE", "PRODUCT_CHANGE", "TRANSFER", "SUBSCRIPTION_PAUSED",
        ] {
            #expect(mapped.contains(type), "\(type)")
        }
    }

    @Test("every method the page names is a method of a service, and the README's manual links the page")
    func namedMethodsAndReadme() throws {
        let page = try ManualPage(Self.path)
        let names = Set(Self.unaryMethods.map { String($0.split(separator: "/").last ?? "") })
        // A code span of two or more capitalized words (`CheckAccess`) is a method's name.
        let camel = ManualPage.codeSpans(page.text).filter { span in
            span.count > 1 && span.first!.isUppercase && span.allSatisfy { $0.isLetter }
                && span.dropFirst().contains { $0.isUppercase } && span.contains { $0.isLowercase }
        }
        #expect(!camel.isEmpty)
        for name in camel { #expect(names.contains(name), "no method \(name)") }
        let readme = try ManualPage("README.md")
        let manual = try #require(readme.table(with: ["page", "what it covers"]))
        #expect(manual.contains { $0["page"]?.contains("(docs/coming-from-hosted-services.md)") == true })
    }
}
