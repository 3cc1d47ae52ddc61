import Config
import Crypto
import Foundation
import RPC
import TestSupport
import Testing
import Wire

@Suite("Mutual TLS")
struct TLSTests {
    /// Two CAs in a temporary folder: "trusted" issues verifier, reader and an expired
    /// identity; "stranger" issues an impostor named verifier.
    struct PKI {
        let trusted: TestPKIFiles
        let stranger: TestPKIFiles
        let folder: String

        init() throws {
            folder = NSTemporaryDirectory() + "rpc-tls-\(UUID().uuidString)"
            let now = Date()
            let year = now.addingTimeInterval(365 * 86400)
            trusted = try TestPKI.write(
                to: folder + "/trusted", caName: "Test Trusted CA",
                identities: [
                    ("server", now.addingTimeInterval(-60), year), ("verifier", now.addingTimeInterval(-60), year),
                    ("reader", now.addingTimeInterval(-60), year),
                    ("expired", now.addingTimeInterval(-30 * 86400), now.addingTimeInterval(-86400)),
                ])
            stranger = try TestPKI.write(
                to: folder + "/stranger", caName: "Test Stranger CA",
                identities: [("verifier", now.addingTimeInterval(-60), year)])
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }

        func client(_ files: TestPKIFiles, _ name: String?) -> TLSConfiguration {
            TLSConfiguration(
                certificatePath: name.map { files[$0]!.certificatePath }, keyPath: name.map { files[$0]!.keyPath },
                caPath: trusted.caCertificatePath)
        }
    }

    func withServer(_ body: (PKI, TestServer) async throws -> Void) async throws {
        let pki = try PKI()
        defer { pki.remove() }
        let server = try TestServer { configuration in
            configuration.tls = TLSConfiguration(
                certificatePath: pki.trusted["server"]!.certificatePath, keyPath: pki.trusted["server"]!.keyPath,
                caPath: pki.trusted.caCertificatePath)
            configuration.accessPolicy = try! AccessPolicy(parsing: "Test/Echo=verifier; */Health=*")
        }
        try await body(pki, server)
        await server.server.shutdown()
    }

    func call(
        _ server: TestServer, _ tls: TLSConfiguration, _ method: String = TestMethods.echo, request: [UInt8] = [42]
    ) async throws -> [UInt8] {
        var configuration = RPCClientConfiguration(tls: tls)
        configuration.initialBackoff = .milliseconds(1)
        let client = try RPCClient(endpoints: [server.endpoint], configuration: configuration)
        return try await client.unary(method, request: request, timeout: .seconds(5))
    }

    /// The server refuses the handshake: the call fails UNAVAILABLE and says TLS refused it.
    /// In TLS 1.3 the client's handshake ends before the server has checked its certificate,
    /// so the refusal reaches the client either as the server's alert (which names the reason)
    /// or, when the client was still writing its request, as a reset. Either way the call
    /// fails UNAVAILABLE, and the server counts a TLS rejection.
    func expectRefused(_ server: TestServer, _ tls: TLSConfiguration, _ detail: String) async {
        await #expect {
            _ = try await call(server, tls)
        } throws: { error in
            guard let error = error as? RPCError, error.code == .unavailable else { return false }
            return error.message.contains(detail) || error.message.contains("Connection reset by peer")
                || error.message.hasSuffix("peer closed the connection")
        }
        var metrics = MetricsTextProbe()
        metrics.render(server.server)
        #expect(metrics.output.contains("rpc_server_frames_rejected_total{reason=\"tls\"}"))
    }

    @Test("the allowed identity succeeds")
    func allowed() async throws {
        try await withServer { (pki: PKI, server: TestServer) async throws in
            #expect(try await call(server, pki.client(pki.trusted, "verifier")) == [42])
        }
    }

    @Test("an identity not allowed for the method is PERMISSION_DENIED; it may call what it is allowed")
    func identityNotAllowed() async throws {
        try await withServer { (pki: PKI, server: TestServer) async throws in
            await #expect(throws: RPCError(.permissionDenied, "reader may not call test.v1.Test/Echo")) {
                _ = try await call(server, pki.client(pki.trusted, "reader"))
            }
            let health = try await call(server, pki.client(pki.trusted, "reader"), TestMethods.health, request: [])
            #expect(try HealthResponse(serialized: health).service == "test")
        }
    }

    @Test("an unknown method is PERMISSION_DENIED to a caller its rules do not admit, UNIMPLEMENTED to one they do")
    func unknownMethodAfterTheAccessRule() async throws {
        try await withServer { (pki: PKI, server: TestServer) async throws in
            await #expect(throws: RPCError(.permissionDenied, "reader may not call test.v1.Test/Nothing")) {
                _ = try await call(server, pki.client(pki.trusted, "reader"), "test.v1.Test/Nothing", request: [])
            }
            // The verifier may call Test/Echo only: an unknown method of Test is still not its to probe.
            await #expect(throws: RPCError(.permissionDenied, "verifier may not call test.v1.Test/Nothing")) {
                _ = try await call(server, pki.client(pki.trusted, "verifier"), "test.v1.Test/Nothing", request: [])
            }
            await #expect(throws: RPCError(.unimplemented, "unknown method \"test.v1.Other/Health\"")) {
                _ = try await call(server, pki.client(pki.trusted, "reader"), "test.v1.Other/Health", request: [])
            }
        }
    }

    @Test("a client without a certificate is refused")
    func noCertificate() async throws {
        try await withServer { (pki: PKI, server: TestServer) async throws in
            await expectRefused(server, pki.client(pki.trusted, nil), "certificate required")
        }
    }

    @Test("a client certificate from another CA is refused")
    func wrongCA() async throws {
        try await withServer { (pki: PKI, server: TestServer) async throws in
            await expectRefused(server, pki.client(pki.stranger, "verifier"), "unknown ca")
        }
    }

    @Test("an expired client certificate is refused")
    func expired() async throws {
        try await withServer { (pki: PKI, server: TestServer) async throws in
            await expectRefused(server, pki.client(pki.trusted, "expired"), "certificate expired")
        }
    }

    @Test("a plaintext client cannot talk to a TLS server")
    func plaintextClient() async throws {
        try await withServer { (_: PKI, server: TestServer) async throws in
            let client = try server.client { $0.initialBackoff = .milliseconds(1) }
            await #expect {
                _ = try await client.unary(TestMethods.echo, request: [1], timeout: .seconds(5))
            } throws: { error in
                (error as? RPCError)?.code == .unavailable
            }
        }
    }

    @Test("the client checks the server's certificate against the CA it trusts")
    func clientRejectsUntrustedServer() async throws {
        try await withServer { (pki: PKI, server: TestServer) async throws in
            let tls = TLSConfiguration(
                certificatePath: pki.trusted["verifier"]!.certificatePath, keyPath: pki.trusted["verifier"]!.keyPath,
                caPath: pki.stranger.caCertificatePath)
            await #expect {
                _ = try await call(server, tls)
            } throws: { error in
                guard let error = error as? RPCError else { return false }
                return error.code == .unavailable && error.message.contains("certificate verify failed")
            }
        }
    }

    @Test("access rules parse and match as documented; malformed rules are refused with the rule")
    func accessPolicy() throws {
        let policy = try AccessPolicy(
            parsing:
                "Ledger/*=verifier; */Health=*; subscriptions.entitlement.v1.Entitlement/CheckAccess=billing,search")
        #expect(policy.allows(method: "subscriptions.ledger.v1.Ledger/RecordNotification", identities: ["verifier"]))
        #expect(!policy.allows(method: "subscriptions.ledger.v1.Ledger/RecordNotification", identities: ["search"]))
        #expect(policy.allows(method: "subscriptions.verifier.v1.Verifier/Health", identities: ["anyone"]))
        #expect(
            policy.allows(method: "subscriptions.entitlement.v1.Entitlement/CheckAccess", identities: ["x", "search"]))
        #expect(
            !policy.allows(method: "subscriptions.entitlement.v1.Entitlement/ListEntitlements", identities: ["search"]))
        #expect(!policy.allows(method: "subscriptions.verifier.v1.Verifier/Health", identities: []))
        #expect(throws: RPCError(.invalidArgument, "access rule \"Ledger\" needs the form PATTERNS=IDENTITIES")) {
            try AccessPolicy(parsing: "Ledger")
        }
        #expect(
            throws: RPCError(
                .invalidArgument,
                "access rule \"Ledger=x\": pattern \"Ledger\" must be *, Service/Method or a full method name")
        ) {
            try AccessPolicy(parsing: "Ledger=x")
        }
    }
}
