import CShims
import Foundation
import Glibc
public import Wire

/// Which certificate identities may call which methods, from configuration such as
/// `Ledger/*=verifier; */Health=*; Entitlement/CheckAccess,Entitlement/CheckAccessBatch=billing,search`.
///
/// A rule is `PATTERNS=IDENTITIES`; rules are separated by `;`, patterns and identities by `,`.
/// A pattern is a full method name (`subscriptions.ledger.v1.Ledger/Health`), `Service/Method`
/// (the service's short name), `Service/*`, `*/Method` or `*`. The identity `*` means any peer
/// with a valid certificate. A call is allowed when some rule matches both its method and one of
/// the caller's identities; anything not allowed is denied.
public struct AccessPolicy: Sendable, Equatable {
    struct Rule: Sendable, Equatable {
        let patterns: [String]
        let identities: [String]
    }

    let rules: [Rule]

    /// Allows every authenticated peer every method.
    public static let allowAuthenticated = AccessPolicy(rules: [Rule(patterns: ["*"], identities: ["*"])])

    init(rules: [Rule]) { self.rules = rules }

    /// Parses the configuration syntax; the error says which rule is malformed.
    public init(parsing text: String) throws(RPCError) {
        var rules: [Rule] = []
        for rawRule in text.split(separator: ";") {
            let rule = rawRule.trimmingCharacters(in: .whitespaces)
            if rule.isEmpty { continue }
            let parts = rule.split(separator: "=", maxSplits: 1).map { String($0) }
            guard parts.count == 2 else {
                throw RPCError(.invalidArgument, "access rule \"\(rule)\" needs the form PATTERNS=IDENTITIES")
            }
            let patterns = parts[0].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let identities = parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !patterns.isEmpty, !identities.isEmpty, !patterns.contains(""), !identities.contains("") else {
                throw RPCError(.invalidArgument, "access rule \"\(rule)\" has an empty pattern or identity")
            }
            for pattern in patterns where pattern != "*" && !pattern.contains("/") {
                throw RPCError(
                    .invalidArgument,
                    "access rule \"\(rule)\": pattern \"\(pattern)\" must be *, Service/Method or a full method name")
            }
            rules.append(Rule(patterns: patterns, identities: identities))
        }
        self.rules = rules
    }

    /// True when one of `identities` may call `method`.
    public func allows(method: String, identities: [String]) -> Bool {
        guard !identities.isEmpty else { return false }
        for rule in rules where rule.patterns.contains(where: { Self.matches(pattern: $0, method: method) }) {
            if rule.identities.contains("*") || rule.identities.contains(where: identities.contains) { return true }
        }
        return false
    }

    static func matches(pattern: String, method: String) -> Bool {
        if pattern == "*" || pattern == method { return true }
        guard let slash = method.lastIndex(of: "/") else { return false }
        let qualifiedService = method[..<slash]
        let service = qualifiedService.split(separator: ".").last.map(String.init) ?? String(qualifiedService)
        let name = String(method[method.index(after: slash)...])
        let parts = pattern.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return false }
        let serviceMatches = parts[0] == "*" || parts[0] == service || parts[0] == String(qualifiedService)
        let nameMatches = parts[1] == "*" || parts[1] == name
        return serviceMatches && nameMatches
    }
}
