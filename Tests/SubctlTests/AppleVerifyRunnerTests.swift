import AppStore
import Crypto
import Foundation
import SubctlKit
import Synchronization
import Testing

/// `apple verify` end to end through the runner: trust anchors and JWS files on disk, payloads
/// signed by a generated Apple-shaped chain, and the real sandbox payloads when present.
@Suite("CommandRunner: apple verify")
struct AppleVerifyRunnerTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let signedDate: Int64 = 1_790_000_000_000
    static let bundleID = "com.example.app"

    /// A temporary folder, removed by `remove()`.
    struct Folder {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("subctl-apple-\(UUID().uuidString)")
            .path

        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }

        func write(_ name: String, _ bytes: [UInt8]) throws -> String {
            let file = "\(path)/\(name)"
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            return file
        }

        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Runs `arguments` and returns what was printed and the error it ended with, if any.
    static func run(_ arguments: [String], input: String = "") async -> (lines: [String], error: SubctlError?) {
        let output = Mutex<[String]>([])
        let runner = CommandRunner(write: { text in output.withLock { $0.append(text) } }, now: { now })
        do throws(SubctlError) {
            try await runner.run(try SubctlCommand.parse(arguments), transport: nil, standardInput: { input })
            return (output.withLock { $0 }, nil)
        } catch {
            return (output.withLock { $0 }, error)
        }
    }

    static func sign(_ chain: AppleSigningChain, _ json: String) throws -> String {
        try chain.sign(payload: Array(json.utf8))
    }

    static let transactionJSON =
        #"{"bundleId":"com.example.app","environment":"Sandbox","signedDate":1790000000000,"#
        + #""transactionId":"2000000001"}"#
    static let renewalJSON =
        #"{"autoRenewStatus":1,"environment":"Sandbox","originalTransactionId":"2000000001","#
        + #""signedDate":1790000000000}"#
    static let appTransactionJSON =
        #"{"appAppleId":12345,"bundleId":"com.example.app","receiptType":"Sandbox","signedDate":1790000000000}"#

    static func notificationJSON(transaction: String, renewal: String, appTransaction: String) -> String {
        #"{"data":{"appAppleId":12345,"bundleId":"com.example.app","environment":"Sandbox","#
            + #""signedAppTransactionInfo":"\#(appTransaction)","signedRenewalInfo":"\#(renewal)","#
            + #""signedTransactionInfo":"\#(transaction)","status":1},"notificationType":"DID_RENEW","#
            + #""notificationUUID":"0b9ef2a5-5f5e-4a83-8b3b-0c6fa58c1f2e","signedDate":1790000000000,"version":"2.0"}"#
    }

    static let decodedNotification = """
        {
          "data" : {
            "appAppleId" : 12345,
            "bundleId" : "com.example.app",
            "environment" : "Sandbox",
            "signedAppTransactionInfo" : {
              "appAppleId" : 12345,
              "bundleId" : "com.example.app",
              "receiptType" : "Sandbox",
              "signedDate" : 1790000000000
            },
            "signedRenewalInfo" : {
              "autoRenewStatus" : 1,
              "environment" : "Sandbox",
              "originalTransactionId" : "2000000001",
              "signedDate" : 1790000000000
            },
            "signedTransactionInfo" : {
              "bundleId" : "com.example.app",
              "environment" : "Sandbox",
              "signedDate" : 1790000000000,
              "transactionId" : "2000000001"
            },
            "status" : 1
          },
          "notificationType" : "DID_RENEW",
          "notificationUUID" : "0b9ef2a5-5f5e-4a83-8b3b-0c6fa58c1f2e",
          "signedDate" : 1790000000000,
          "version" : "2.0"
        }
        """

    /// A chain, its root as DER and PEM files, and a notification carrying all three nested kinds.
    struct Setup {
        let folder: Folder
        let chain: AppleSigningChain
        let derRoot: String
        let pemRoot: String
        let notification: String

        init() throws {
            folder = try Folder()
            chain = try AppleSigningChain.generate(now: AppleVerifyRunnerTests.now)
            derRoot = try folder.write("root.cer", chain.root.der)
            pemRoot = try folder.write("root.pem", Array(chain.root.pem.utf8))
            notification = try AppleVerifyRunnerTests.sign(
                chain,
                AppleVerifyRunnerTests.notificationJSON(
                    transaction: try AppleVerifyRunnerTests.sign(chain, AppleVerifyRunnerTests.transactionJSON),
                    renewal: try AppleVerifyRunnerTests.sign(chain, AppleVerifyRunnerTests.renewalJSON),
                    appTransaction: try AppleVerifyRunnerTests.sign(chain, AppleVerifyRunnerTests.appTransactionJSON)))
        }

        func arguments(_ source: [String], root: String? = nil, env: String = "sandbox") -> [String] {
            ["apple", "verify"] + source + [
                "--root", root ?? derRoot, "--bundle", AppleVerifyRunnerTests.bundleID, "--env", env,
            ]
        }
    }

    @Test("a notification verifies with each JWS inside it decoded in place and verified too")
    func notificationWithNestedPayloads() async throws {
        let setup = try Setup()
        defer { setup.folder.remove() }
        let expected = [
            Self.decodedNotification, "data.signedTransactionInfo: valid", "data.signedRenewalInfo: valid",
            "data.signedAppTransactionInfo: valid", "valid",
        ]
        let file = try setup.folder.write("n.jws", Array((setup.notification + "\n").utf8))
        for arguments in [
            setup.arguments([setup.notification]), setup.arguments(["--file", file], root: setup.pemRoot),
            setup.arguments(["-"]) + ["--kind", "notification"],
        ] {
            let (lines, error) = await Self.run(arguments, input: setup.notification + "\n")
            #expect(error == nil)
            #expect(lines == expected)
        }
    }

    @Test("a transaction and renewal info verify, their kind read from the payload")
    func kindsDetected() async throws {
        let setup = try Setup()
        defer { setup.folder.remove() }
        let transaction = await Self.run(setup.arguments([try Self.sign(setup.chain, Self.transactionJSON)]))
        #expect(transaction.error == nil)
        #expect(transaction.lines.last == "valid")
        #expect(transaction.lines.count == 2)
        let renewal = await Self.run(setup.arguments([try Self.sign(setup.chain, Self.renewalJSON)]))
        #expect(renewal.error == nil)
        #expect(renewal.lines.last == "valid")
    }

    @Test("a changed signature is refused with bad_signature and exit status 14, the payload still shown")
    func tamperedSignature() async throws {
        let setup = try Setup()
        defer { setup.folder.remove() }
        var parts = setup.notification.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        let (lines, error) = await Self.run(setup.arguments([parts.joined(separator: ".")]))
        #expect(lines.first == Self.decodedNotification)
        #expect(lines.last == "invalid: bad_signature: the ES256 signature does not verify with the leaf's key")
        #expect(
            error == SubctlError(.refused(.badSignature), "the ES256 signature does not verify with the leaf's key"))
        #expect(error?.code.exitCode == 14)
    }

    @Test("a nested JWS from a foreign chain is refused with its path, the notification itself valid")
    func foreignNestedTransaction() async throws {
        let setup = try Setup()
        defer { setup.folder.remove() }
        let foreign = try Self.sign(try AppleSigningChain.generate(now: Self.now), Self.transactionJSON)
        let notification = try Self.sign(
            setup.chain,
            Self.notificationJSON(
                transaction: foreign, renewal: try Self.sign(setup.chain, Self.renewalJSON),
                appTransaction: try Self.sign(setup.chain, Self.appTransactionJSON)))
        let verifier = try AppleSignedDataVerifier(
            anchors: [setup.chain.root], configuration: .init(bundleID: Self.bundleID, environment: .sandbox))
        let refusal = #expect(throws: AppleVerificationError.self) {
            try verifier.verifyTransaction(foreign, now: Self.now)
        }
        let reason = try #require(refusal).message
        #expect(refusal?.code == .badChain)
        let (lines, error) = await Self.run(setup.arguments([notification]))
        #expect(lines.first == Self.decodedNotification)
        #expect(
            Array(lines.dropFirst()) == [
                "data.signedTransactionInfo: invalid: bad_chain: \(reason)", "data.signedRenewalInfo: valid",
                "data.signedAppTransactionInfo: valid", "invalid: bad_chain: data.signedTransactionInfo: \(reason)",
            ])
        #expect(error == SubctlError(.refused(.badChain), "data.signedTransactionInfo: \(reason)"))
        #expect(error?.code.exitCode == 12)
    }

    @Test("the wrong environment, the wrong app and an unknown kind each exit with their own status")
    func claimsAndKinds() async throws {
        let setup = try Setup()
        defer { setup.folder.remove() }
        let production = await Self.run(
            setup.arguments([try Self.sign(setup.chain, Self.transactionJSON)], env: "Production") + [
                "--app-id", "12345",
            ])
        #expect(
            production.lines == [
                """
                {
                  "bundleId" : "com.example.app",
                  "environment" : "Sandbox",
                  "signedDate" : 1790000000000,
                  "transactionId" : "2000000001"
                }
                """,
                "invalid: wrong_environment: signed for environment \"Sandbox\", this endpoint takes Production",
            ])
        #expect(production.error?.code.exitCode == 16)
        let otherApp = await Self.run(
            [
                "apple", "verify", setup.notification, "--root", setup.derRoot, "--bundle", "com.other", "--env",
                "Sandbox",
            ])
        let otherAppReason = "wrong_app: bundleId \"com.example.app\" is not the configured \"com.other\""
        #expect(
            Array(otherApp.lines.dropFirst()) == [
                "data.signedTransactionInfo: invalid: \(otherAppReason)", "data.signedRenewalInfo: valid",
                "data.signedAppTransactionInfo: invalid: \(otherAppReason)", "invalid: \(otherAppReason)",
            ])
        #expect(otherApp.error?.code.exitCode == 15)
        let unknown = await Self.run(setup.arguments([try Self.sign(setup.chain, #"{"bundleId":"com.example.app"}"#)]))
        #expect(
            unknown.lines == [
                "{\n  \"bundleId\" : \"com.example.app\"\n}",
                "invalid: malformed: the payload has none of notificationType, transactionId, autoRenewStatus, "
                    + "renewalDate or originalTransactionId; name its kind with --kind",
            ])
        #expect(unknown.error?.code.exitCode == 10)
        let garbage = await Self.run(setup.arguments(["not a jws"]))
        #expect(garbage.lines == ["invalid: malformed: a compact JWS has 3 dot-separated segments, this has 1"])
        #expect(garbage.error?.code.exitCode == 10)
    }

    @Test("unreadable input and anchor files are usage-class errors (exit status 2)")
    func unreadableFiles() async throws {
        let setup = try Setup()
        defer { setup.folder.remove() }
        let missing = await Self.run(setup.arguments(["--file", "\(setup.folder.path)/none.jws"]))
        #expect(missing.lines.isEmpty)
        #expect(missing.error?.code == .invalidArgument)
        #expect(missing.error?.message.hasPrefix("cannot read --file \(setup.folder.path)/none.jws: ") == true)
        let notACertificate = try setup.folder.write("root.txt", Array("hello".utf8))
        let bad = await Self.run(setup.arguments([setup.notification], root: notACertificate))
        #expect(bad.lines.isEmpty)
        #expect(bad.error?.code.exitCode == 2)
        #expect(bad.error?.message.hasPrefix("--root \(notACertificate) is not a DER or PEM certificate: ") == true)
    }

    // MARK: Real App Store data

    /// shared/fixtures beside the checkout (the repository root's parent).
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple").path
    static let fixturesPresent = FileManager.default.fileExists(atPath: "\(fixtures)/jws")

    static func realArguments(_ source: [String]) -> [String] {
        ["apple", "verify"] + source + [
            "--root", "\(fixtures)/certs/AppleRootCA-G3.cer", "--bundle", "com.loki-project.loki-messenger", "--env",
            "Sandbox",
        ]
    }

    @Test(
        "a real DID_RENEW notification verifies, its transaction and renewal info decoded and verified",
        .enabled(if: fixturesPresent, "../shared/fixtures/apple is absent: real App Store payloads not checked"))
    func realNotification() async throws {
        let (lines, error) = await Self.run(
            Self.realArguments(["--file", "\(Self.fixtures)/jws/DID_RENEW_sandbox_2025-10-01.jws"]))
        #expect(error == nil)
        #expect(
            Array(lines.dropFirst()) == ["data.signedTransactionInfo: valid", "data.signedRenewalInfo: valid", "valid"])
        let json = try #require(lines.first)
        #expect(json.contains(#"    "signedTransactionInfo" : {"# + "\n"))
        #expect(json.contains(#"      "transactionId" : "2000001024998954","#))
        #expect(json.contains(#"    "signedRenewalInfo" : {"# + "\n"))
        #expect(json.contains(#"      "autoRenewStatus" : 1,"#))
        #expect(json.contains(#"  "notificationType" : "DID_RENEW","#))
    }

    @Test(
        "a real notification with one changed character is refused with a non-zero exit status",
        .enabled(if: fixturesPresent, "../shared/fixtures/apple is absent: real App Store payloads not checked"))
    func realTamperedNotification() async throws {
        let text = try String(
            contentsOfFile: "\(Self.fixtures)/jws/DID_RENEW_sandbox_2025-10-01.jws", encoding: .utf8
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        var characters = Array(text)
        // A character of the signature, swapped for another base64url character.
        let index = characters.count - 20
        characters[index] = characters[index] == "A" ? "B" : "A"
        let (lines, error) = await Self.run(Self.realArguments(["-"]), input: String(characters))
        #expect(lines.last == "invalid: bad_signature: the ES256 signature does not verify with the leaf's key")
        #expect(error?.code == .refused(.badSignature))
        #expect(error?.code.exitCode == 14)
    }
}
