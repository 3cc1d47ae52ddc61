import Foundation
import ProtoJSON
import SubctlKit
import TestSupport
import Testing

/// Holds `docs/support-playbook.md` to `subctl`: every command line its `sh` blocks show is one
/// `subctl` parses, and the JSON of every `call` fits the method's request message.
@Suite("docs/support-playbook.md: every subctl command line parses")
struct SupportPlaybookTests {
    /// The shell variables the page's commands use, with a value each.
    static let variables = ["TOKEN": "play-token-4711"]

    /// The page's `subctl` command lines, each as its arguments after `subctl` (continuation
    /// lines joined, quotes removed, `$NAME` filled from `variables`).
    static func commandLines() throws -> [[String]] {
        let page = try ManualPage("docs/support-playbook.md")
        return try page.blocks("sh").flatMap { block in
            try block.replacingOccurrences(of: "\\\n", with: " ").components(separatedBy: "\n")
                .filter { $0.hasPrefix("subctl ") }
                .map { line in Array(try words(line).dropFirst()) }
        }
    }

    /// A command line's words as a POSIX shell splits them, for the quoting the page uses:
    /// single quotes keep everything, double quotes and bare words expand `$NAME`.
    static func words(_ line: String) throws -> [String] {
        var words: [String] = []
        var word: String?
        var quote: Character?
        var characters = line[...]
        while let character = characters.popFirst() {
            switch (quote, character) {
            case (nil, " "):
                if let done = word { words.append(done) }
                word = nil
            case (nil, "'"), (nil, "\""):
                quote = character
                word = word ?? ""
            case ("'", "'"), ("\"", "\""):
                quote = nil
            case (let open, "$") where open != "'":
                let name = characters.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                characters = characters.dropFirst(name.count)
                word = (word ?? "") + (try #require(variables[String(name)], "no value for $\(name) in \(line)"))
            default:
                word = (word ?? "") + String(character)
            }
        }
        try #require(quote == nil, "unclosed quote in \(line)")
        if let done = word { words.append(done) }
        return words
    }

    @Test("every command line shown parses, and each call's JSON is its method's request")
    func commandsParse() throws {
        let lines = try Self.commandLines()
        #expect(lines.count >= 25)
        for arguments in lines {
            let command: SubctlCommand
            do { command = try SubctlCommand.parse(arguments) } catch {
                Issue.record("\(arguments): \(error)")
                continue
            }
            #expect(command != .help, "\(arguments)")
            #expect(command.callOptions != nil, "\(arguments) names no service to call")
            if case .call(let method, .json(let json), _) = command {
                #expect(throws: Never.self, "\(arguments)") { try ProtoJSON.encode(json: json, as: method.inputType) }
            }
        }
    }

    @Test("the page shows a command for each ticket's verbs")
    func verbsShown() throws {
        // Each command line's verb, by its first word and by its first two.
        let shown = Set(
            try Self.commandLines().flatMap { [$0.prefix(1), $0.prefix(2)].map { $0.joined(separator: " ") } })
        let expected: Set<String> = [
            "find", "account", "access timeline", "history", "call Verifier/RefreshSubscription",
            "call Verifier/RestorePurchases", "apple set-token", "call Ledger/MergeAccounts", "apple consumption",
            "apple refunds", "google revoke", "google refund", "apple extend", "apple extend-status", "google defer",
            "call Ledger/GrantEntitlement", "google cancel", "call Ledger/DeleteAccount", "events list", "events dead",
            "events replay", "events test", "inbox", "replay",
        ]
        #expect(expected.subtracting(shown).isEmpty, "not shown: \(expected.subtracting(shown).sorted())")
    }
}
