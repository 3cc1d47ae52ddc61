import Foundation
import TestSupport
import Testing

/// The README's `curl` examples, run with the real `curl` against the real services: each
/// `sh` block that starts with `curl` is one command (with its `\` continuations) followed by
/// the exact output it must print.
@Suite("README examples", .serialized)
struct ReadmeExamplesTests {
    struct Example: CustomStringConvertible {
        let command: String
        let output: String
        var description: String { command }
    }

    static func examples() throws -> [Example] {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        var examples: [Example] = []
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
                Example(command: command.joined(separator: "\n"), output: lines[index...].joined(separator: "\n")))
        }
        return examples
    }

    @Test("every curl example prints what the README says")
    func curlExamples() async throws {
        let examples = try Self.examples()
        #expect(examples.count >= 2)
        let stack = try await StoreSimStack()
        // The README's default ports, as the test's services listen on them.
        let ports = [
            "8001": try await stack.verifier.httpPort(), "8002": try await stack.entitlementStack.ledger.httpPort(),
            "8003": stack.entitlementHTTP,
        ]
        for example in examples {
            var command = example.command
            for (readme, actual) in ports {
                command = command.replacingOccurrences(of: "127.0.0.1:\(readme)/", with: "127.0.0.1:\(actual)/")
            }
            let result = try await runCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", command])
            #expect(result.status == 0, "\(example): \(result.errors)")
            let printed = result.output
            #expect(printed.trimmingCharacters(in: .newlines) == example.output, "\(example)")
        }
        await stack.stop()
    }
}
