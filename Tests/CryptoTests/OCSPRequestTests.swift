import Crypto
import Foundation
import Testing

/// OCSP requests built here, answered by the `openssl ocsp` responder, checked here.
@Suite("OCSP")
struct OCSPRequestTests {
    struct Authority {
        let key: PrivateKey
        let certificate: X509Certificate

        init(_ name: String) throws {
            key = try PrivateKey.generate(.p256)
            certificate = try CertificateIssuer.selfSigned(
                CertificateRequest(
                    commonName: name, notBefore: Date().addingTimeInterval(-3600),
                    notAfter: Date().addingTimeInterval(86_400 * 365), isCertificateAuthority: true),
                key: key)
        }

        func issue(_ name: String, serial: UInt64) throws -> X509Certificate {
            try CertificateIssuer.issue(
                CertificateRequest(
                    commonName: name, notBefore: Date().addingTimeInterval(-3600),
                    notAfter: Date().addingTimeInterval(86_400 * 30), serialNumber: serial),
                subjectKey: try PrivateKey.generate(.p256), issuer: certificate, issuerKey: key)
        }
    }

    /// Answers `request` with `openssl ocsp` from an index listing serial 0x1001 as valid and
    /// 0x1002 as revoked (key compromise), signing as `signer`.
    static func respond(_ request: OCSPRequest, issuer: Authority, signer: Authority, in directory: TemporaryDirectory)
        throws -> [UInt8]
    {
        let index = """
            V\t301231235959Z\t\t1001\tunknown\t/CN=good
            R\t301231235959Z\t251101000000Z,keyCompromise\t1002\tunknown\t/CN=revoked

            """
        let indexPath = try directory.write(index, to: "index.txt")
        let issuerPath = try directory.write(issuer.certificate.pem, to: "issuer.pem")
        let signerPath = try directory.write(signer.certificate.pem, to: "signer.pem")
        let keyPath = try directory.write(try signer.key.pemPKCS8(), to: "signer.key")
        let requestPath = directory.path("request.der")
        try Data(request.der).write(to: URL(fileURLWithPath: requestPath))
        let responsePath = directory.path("response.der")
        let result = try OpenSSLCommand.run([
            "ocsp", "-index", indexPath, "-CA", issuerPath, "-rsigner", signerPath, "-rkey", keyPath, "-reqin",
            requestPath, "-respout", responsePath, "-ndays", "1",
        ])
        #expect(result.status == 0, "\(result.output)")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: responsePath)))
    }

    @Test("good, revoked and unknown certificates, as the responder says")
    func statuses() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let ca = try Authority("Test OCSP CA")
        let trust = try TrustStore(anchors: [ca.certificate])
        let good = try OCSPRequest(certificate: try ca.issue("good", serial: 0x1001), issuer: ca.certificate)
        #expect(
            try good.status(
                from: try Self.respond(good, issuer: ca, signer: ca, in: directory), issuer: ca.certificate,
                trust: trust) == .good)
        let revoked = try OCSPRequest(certificate: try ca.issue("revoked", serial: 0x1002), issuer: ca.certificate)
        let answer = try revoked.status(
            from: try Self.respond(revoked, issuer: ca, signer: ca, in: directory), issuer: ca.certificate, trust: trust
        )
        #expect(answer == .revoked(at: Date(timeIntervalSince1970: 1_761_955_200), reason: 1))
        let unknown = try OCSPRequest(certificate: try ca.issue("new", serial: 0x1003), issuer: ca.certificate)
        #expect(
            try unknown.status(
                from: try Self.respond(unknown, issuer: ca, signer: ca, in: directory), issuer: ca.certificate,
                trust: trust)
                == .unknown)
    }

    @Test("an answer signed by a stranger, about another certificate, or not OCSP at all is refused")
    func refusals() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let ca = try Authority("Test OCSP CA")
        let stranger = try Authority("Someone Else")
        let trust = try TrustStore(anchors: [ca.certificate])
        let request = try OCSPRequest(certificate: try ca.issue("good", serial: 0x1001), issuer: ca.certificate)
        let forged = try Self.respond(request, issuer: ca, signer: stranger, in: directory)
        func refusal(_ answer: [UInt8]) -> String? {
            do {
                _ = try request.status(from: answer, issuer: ca.certificate, trust: trust)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal(forged)?.hasPrefix("the OCSP response's signature or signer is not trusted") == true)
        let other = try OCSPRequest(certificate: try ca.issue("revoked", serial: 0x1002), issuer: ca.certificate)
        let aboutOther = try Self.respond(other, issuer: ca, signer: ca, in: directory)
        #expect(refusal(aboutOther) == "the OCSP response says nothing about this certificate")
        #expect(refusal([0x30, 0x03, 0x0a, 0x01, 0x00]) == "the OCSP response has no basic response")
        #expect(refusal(Array("not der".utf8)) == "the OCSP response does not parse")
    }
}
