import AppStore
import Crypto
import Foundation
import ServiceProcessKit
import Synchronization
import Testing

/// Online revocation checks against answers from the real `openssl ocsp` responder.
@Suite("Apple signed data: online revocation checks")
struct AppleRevocationCheckerTests {
    /// Answers OCSP requests the way a responder for `chain` would, with `openssl ocsp` in offline
    /// mode: the intermediate answers for the leaf, the root for the intermediate.
    final class Responder: Sendable {
        let chain: AppleSigningChain
        let directory: URL
        let revokedLeaf: Bool
        let requests = Mutex(0)

        init(chain: AppleSigningChain, revokedLeaf: Bool) throws {
            self.chain = chain
            self.revokedLeaf = revokedLeaf
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("ocsp-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }

        func answer(_ request: [UInt8]) throws -> [UInt8] {
            let count = requests.withLock { value -> Int in
                value += 1
                return value
            }
            let leafLine =
                revokedLeaf
                ? "R\t301231235959Z\t251101000000Z,keyCompromise\t\(chain.leaf.serialNumberHex)\tunknown\t/CN=leaf"
                : "V\t301231235959Z\t\t\(chain.leaf.serialNumberHex)\tunknown\t/CN=leaf"
            let index =
                leafLine + "\nV\t301231235959Z\t\t\(chain.intermediate.serialNumberHex)\tunknown\t/CN=intermediate\n"
            func file(_ name: String, _ text: String) throws -> String {
                let url = directory.appendingPathComponent("\(count)-\(name)")
                try Data(text.utf8).write(to: url)
                return url.path
            }
            let requestPath = directory.appendingPathComponent("\(count)-request.der").path
            try Data(request).write(to: URL(fileURLWithPath: requestPath))
            let responsePath = directory.appendingPathComponent("\(count)-response.der").path
            // The leaf's status comes from the intermediate; the intermediate's from the root.
            let forLeaf = count == 1
            let (issuer, key) = forLeaf ? (chain.intermediate, chain.intermediateKey) : (chain.root, chain.rootKey)
            let issuerPath = try file("issuer.pem", issuer.pem)
            _ = try SpawnedProcess.run(
                URL(fileURLWithPath: "/usr/bin/env"),
                [
                    "openssl", "ocsp", "-index", try file("index.txt", index), "-CA", issuerPath, "-rsigner",
                    issuerPath,
                    "-rkey", try file("issuer.key", try key.pemPKCS8()), "-reqin", requestPath, "-respout",
                    responsePath, "-ndays", "1",
                ])
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: responsePath)))
        }
    }

    static func chain() throws -> AppleSigningChain {
        var options = AppleSigningChain.Options()
        options.ocspResponderURL = "http://ocsp.test.invalid/ocsp03-wwdrg6"
        return try AppleSigningChain.generate(options: options)
    }

    static func payload(_ chain: AppleSigningChain) throws -> String {
        try chain.sign(["bundleId": "com.example.app", "environment": "Sandbox", "transactionId": "1"])
    }

    @Test("good answers for the leaf and the intermediate pass, and are cached")
    func good() async throws {
        let chain = try Self.chain()
        let responder = try Responder(chain: chain, revokedLeaf: false)
        defer { responder.remove() }
        let urls = Mutex<[String]>([])
        let checker = try AppleRevocationChecker(anchors: [chain.root]) { url, request in
            urls.withLock { $0.append(url.absoluteString) }
            return try responder.answer(request)
        }
        try await checker.check(try Self.payload(chain))
        try await checker.check(try Self.payload(chain))
        #expect(
            urls.withLock { $0 } == [
                "http://ocsp.test.invalid/ocsp03-wwdrg6", "http://ocsp.test.invalid/ocsp03-wwdrg6",
            ])
    }

    @Test("a revoked leaf is a bad certificate")
    func revoked() async throws {
        let chain = try Self.chain()
        let responder = try Responder(chain: chain, revokedLeaf: true)
        defer { responder.remove() }
        let checker = try AppleRevocationChecker(anchors: [chain.root]) { _, request in try responder.answer(request) }
        await #expect {
            try await checker.check(try Self.payload(chain))
        } throws: { error in
            let refusal = error as? AppleVerificationError
            return refusal?.code == .badCertificate && refusal?.message.contains("revoked") == true
        }
    }

    @Test("a responder that cannot be reached, or answers nonsense, is retryable, never invalid")
    func networkFailures() async throws {
        let chain = try Self.chain()
        let unreachable = try AppleRevocationChecker(anchors: [chain.root]) { _, _ in
            throw URLError(.cannotConnectToHost)
        }
        await #expect {
            try await unreachable.check(try Self.payload(chain))
        } throws: { ($0 as? AppleVerificationError)?.code == .retryable }
        let nonsense = try AppleRevocationChecker(anchors: [chain.root]) { _, _ in Array("<html>busy</html>".utf8) }
        await #expect {
            try await nonsense.check(try Self.payload(chain))
        } throws: { ($0 as? AppleVerificationError)?.code == .retryable }
    }

    @Test("a chain that names no responder cannot be checked online")
    func noResponder() async throws {
        let chain = try AppleSigningChain.generate()
        let checker = try AppleRevocationChecker(anchors: [chain.root]) { _, _ in [] }
        await #expect {
            try await checker.check(try Self.payload(chain))
        } throws: { ($0 as? AppleVerificationError)?.code == .badCertificate }
    }
}
