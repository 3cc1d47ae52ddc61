import Foundation
import ServiceProcessKit
import TestSupport
import Testing
import VerifierService

/// The manual's account token (`docs/stores.md`, "The `appAccountToken` an app buys with") held
/// to the verifier's: the namespace it prints is the default, and its worked example, run with
/// `python3`, prints what the verifier expects of that account.
@Suite("Docs: the appAccountToken namespace and its worked example")
struct AccountTokenDocsTests {
    static let title = "The `appAccountToken` an app buys with"

    static func section() throws -> ManualPage {
        try #require(try ManualPage("docs/stores.md").section(title), "docs/stores.md has no section \(title)")
    }

    @Test("the namespace the page names is the verifier's default")
    func namespace() throws {
        let section = try Self.section()
        let uuids = ManualPage.codeSpans(section.text).filter { UUID(uuidString: $0) != nil }
        let expected = AppleSettings.defaultTokenNamespace.uuidString.lowercased()
        #expect(uuids.first == expected, "the first UUID of the section is the namespace")
        // The Swift and Kotlin examples name the same namespace.
        for block in section.blocks("swift") + section.blocks("kotlin") {
            #expect(block.contains("\"\(expected)\""), "\(block)")
        }
    }

    @Test("the worked example prints, with python3, the token the verifier expects of its account")
    func workedExample() async throws {
        let section = try Self.section()
        let block = try #require(
            section.blocks("sh").first { $0.hasPrefix("python3 -c ") }, "no python3 example in the section")
        let lines = block.split(separator: "\n").map(String.init)
        try #require(lines.count == 2, "one command and its output: \(block)")
        let (command, printed) = (lines[0], lines[1])
        // The account and the namespace the one-liner names: uuid.uuid5(uuid.UUID("<ns>"), "<account>").
        let quoted = command.components(separatedBy: "\"")
        try #require(quoted.count == 5, "\(command)")
        let (namespace, account) = (try #require(UUID(uuidString: quoted[1])), quoted[3])
        #expect(namespace == AppleSettings.defaultTokenNamespace)
        #expect(printed == AccountToken.expected(for: account, namespace: namespace))
        // The prose names the same pair.
        #expect(section.text.contains("The account `\(account)` buys with `\(printed)`"))
        let result = try await runCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", command])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.trimmingCharacters(in: .newlines) == printed)
    }
}
