import Foundation
import TestSupport
import Testing

/// The `curl` examples of the README and of the manual in `docs/` (but the quickstart, run by
/// `QuickstartTests` against the sandbox it describes), run with the real `curl` against
/// the real services: each `sh` block that starts with `curl` is one command (with its `\`
/// continuations) followed by the exact output it must print. The examples run in one stack, in
/// the order they are read (`README.md`, then the pages of `docs/` by name), so one may rely on
/// what an earlier one did.
@Suite("README and manual examples", .serialized)
struct ReadmeExamplesTests {
    struct Example: CustomStringConvertible {
        let page: String
        let command: String
        let output: String
        var description: String { "\(page): \(command)" }
    }

    /// `README.md`, then every `docs/*.md` in name order.
    static func pages() throws -> [URL] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let docs = root.appendingPathComponent("docs")
        // The quickstart runs against a sandbox of its own, with its own check (QuickstartTests).
        let manual = try FileManager.default.contentsOfDirectory(atPath: docs.path)
            .filter { $0.hasSuffix(".md") && $0 != "quickstart.md" }
            .sorted().map { docs.appendingPathComponent($0) }
        return [root.appendingPathComponent("README.md")] + manual
    }

    static func examples() throws -> [Example] {
        var examples: [Example] = []
        for page in try pages() {
            let text = try String(contentsOf: page, encoding: .utf8)
            for block in text.components(separatedBy: "```sh\n").dropFirst() {
                let lines = block.components(separatedBy: "\n```")[0].split(separator: "\n").map(String.init)
                guard lines.first?.hasPrefix("curl ") == true else { continue }
                var command: [String] = []
                var index = 0
                while index < lines.count {
                    command.append(lines[index])
                    index += 1
                    if !command.last!.hasSuffix("\\") { break }
                }
                examples.append(
                    Example(
                        page: page.lastPathComponent, command: command.joined(separator: "\n"),
                        output: lines[index...].joined(separator: "\n")))
            }
        }
        return examples
    }

    @Test("every curl example prints what its page says")
    func curlExamples() async throws {
        let examples = try Self.examples()
        // The README's first call, and the manual's calls over HTTP, of subscribers, grants and
        // deletions: wherever they are, none goes missing.
        #expect(examples.first?.page == "README.md")
        for method in [
            "Entitlement/CheckAccess", "Ledger/GetSubscription", "Entitlement/HasActiveSubscriptions",
            "Ledger/GrantEntitlement", "Ledger/DeleteAccount",
        ] {
            #expect(examples.contains { $0.command.contains(".\(method) ") }, "no example calls \(method)")
        }
        let stack = try await StoreSimStack()
        // The default ports the examples name, as the test's services listen on them.
        let ports = [
            "8001": try await stack.verifier.httpPort(), "8002": try await stack.entitlementStack.ledger.httpPort(),
            "8003": stack.entitlementHTTP,
        ]
        for example in examples {
            var command = example.command
            for (documented, actual) in ports {
                command = command.replacingOccurrences(
                    of: "127.0.0.1:\(documented)/", with: "127.0.0.1:\(actual)/")
            }
            let result = try await runCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", command])
            #expect(result.status == 0, "\(example): \(result.errors)")
            let printed = result.output
            #expect(printed.trimmingCharacters(in: .newlines) == example.output, "\(example)")
        }
        await stack.stop()
    }
}
