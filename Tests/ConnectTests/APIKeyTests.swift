import Connect
import Crypto
import Foundation
import HTTP
import RPC
import TestSupport
import Testing
import Wire

@Suite("API keys for HTTP callers")
struct APIKeyTests {
    static func keyFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func line(_ identity: String, _ key: String) -> String { "\(identity) \(Digest.sha256Hex(Array(key.utf8)))" }

    @Test("a key stands for its identity; a missing, malformed or unknown one is unauthenticated")
    func identities() throws {
        let store = try APIKeyStore(
            path: try Self.keyFile(
                "# billing backend\n\(Self.line("billing", "k-1"))\n\n\(Self.line("crm", "k-2"))  # crm\n"))
        #expect(store.count == 2)
        #expect(try store.identity(authorization: "Bearer k-1").get() == "billing")
        #expect(try store.identity(authorization: "bearer  k-2").get() == "crm")
        let refusals: [(String?, String)] = [
            (nil, "UNAUTHENTICATED: an API key is required: Authorization: Bearer KEY"),
            ("", "UNAUTHENTICATED: an API key is required: Authorization: Bearer KEY"),
            ("Basic k-1", "UNAUTHENTICATED: the Authorization header must be Bearer KEY"),
            ("Bearer", "UNAUTHENTICATED: the Authorization header must be Bearer KEY"),
            ("Bearer k-3", "UNAUTHENTICATED: the API key is not valid"),
        ]
        for (header, expected) in refusals {
            guard case .failure(let error) = store.identity(authorization: header) else {
                Issue.record("\(header ?? "nil") was accepted")
                continue
            }
            #expect(error.description == expected)
        }
    }

    @Test(
        "a file that cannot be used is refused naming its line, and a reload keeps the keys in force",
        arguments: [
            ("billing", "line 1: expected IDENTITY SHA256-HEX, got 1 words"),
            ("billing abc", "line 1: the key's SHA-256 must be 64 hex digits"),
            ("billing \(String(repeating: "g", count: 64))", "line 1: the key's SHA-256 must be 64 hex digits"),
            ("a b c", "line 1: expected IDENTITY SHA256-HEX, got 3 words"),
            ("\(line("a", "k"))\n\(line("b", "k"))", "line 2: the same key is already listed for a"),
        ])
    func badFiles(text: String, problem: String) throws {
        let path = try Self.keyFile(text)
        let error = #expect(throws: APIKeyStore.FileError.self) { try APIKeyStore(path: path) }
        #expect(error?.description == "\(path) \(problem)")
        let good = try Self.keyFile(Self.line("billing", "k-1"))
        let store = try APIKeyStore(path: good)
        try text.write(toFile: good, atomically: true, encoding: .utf8)
        #expect(throws: APIKeyStore.FileError.self) { try store.reload() }
        #expect(try store.identity(authorization: "Bearer k-1").get() == "billing")
    }

    @Test("a reload takes new keys and drops revoked ones")
    func reload() throws {
        let path = try Self.keyFile(Self.line("billing", "k-1"))
        let store = try APIKeyStore(path: path)
        try "\(Self.line("billing", "k-new"))\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try store.reload() == 1)
        #expect(try store.identity(authorization: "Bearer k-new").get() == "billing")
        #expect(throws: RPCError.self) { try store.identity(authorization: "Bearer k-1").get() }
    }

    @Test("over HTTP: no key and a wrong key are 401, a key's identity goes through the access policy")
    func overHTTP() async throws {
        let store = try APIKeyStore(
            path: try Self.keyFile("\(Self.line("billing", "k-1"))\n\(Self.line("crm", "k-2"))\n"))
        var configuration = RPCServerConfiguration()
        configuration.accessPolicy = try AccessPolicy(parsing: "Entitlement/CheckAccess=billing")
        let fixture = try GatewayFixture(configuration: configuration, identify: { store.identify($0) })
        let check = EntitlementRPC.checkAccess.name
        let missing = try await fixture.postJSON(check, #"{"accountId": "a"}"#)
        #expect(missing.status == 401)
        #expect(
            missing.text == #"{"code":"unauthenticated","message":"an API key is required: Authorization: Bearer KEY"}"#
        )
        let wrong = try await fixture.postJSON(check, "{}", headers: ["Authorization": "Bearer nope"])
        #expect(wrong.status == 401)
        #expect(wrong.text == #"{"code":"unauthenticated","message":"the API key is not valid"}"#)
        let allowed = try await fixture.postJSON(
            check, #"{"accountId": "a"}"#, headers: ["Authorization": "Bearer k-1"])
        #expect(allowed.status == 200)
        let other = try await fixture.postJSON(check, "{}", headers: ["Authorization": "Bearer k-2"])
        #expect(other.status == 403)
        #expect(other.text == #"{"code":"permission_denied","message":"crm may not call \#(check)"}"#)
        let list = try await fixture.postJSON(
            EntitlementRPC.listEntitlements.name, "{}", headers: ["Authorization": "Bearer k-1"])
        #expect(list.status == 403)
        await fixture.server.shutdown()
    }
}
