import Crypto
import Foundation
import Testing

@Suite("CertificateIssuer")
struct CertificateIssuerTests {
    static let now = Date()
    static let appleMarkerOID = "1.2.840.113635.100.6.11.1"

    static func request(
        _ name: String, ca: Bool = false, notBefore: Date = now.addingTimeInterval(-3600),
        notAfter: Date = now.addingTimeInterval(86400)
    ) -> CertificateRequest {
        CertificateRequest(
            commonName: name, dnsNames: ca ? [] : [name], notBefore: notBefore, notAfter: notAfter,
            isCertificateAuthority: ca, extendedKeyUsage: ca ? [] : [.serverAuth, .clientAuth])
    }

    /// A root CA of `kind` and its key.
    static func makeCA(_ kind: PrivateKey.Kind = .p256, name: String = "Test Root") throws -> (
        X509Certificate, PrivateKey
    ) {
        let key = try PrivateKey.generate(kind)
        return (try CertificateIssuer.selfSigned(request(name, ca: true), key: key), key)
    }

    @Test(
        "a leaf verifies against its CA with the digest the issuer key calls for",
        arguments: [
            (PrivateKey.Kind.p256, "ecdsa-with-SHA256"), (.p384, "ecdsa-with-SHA384"),
            (.rsa2048, "sha256WithRSAEncryption"),
        ])
    func leafVerifiesAgainstItsCA(kind: PrivateKey.Kind, signatureAlgorithm: String) throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (ca, caKey) = try Self.makeCA(kind)
        let leaf = try CertificateIssuer.issue(
            Self.request("leaf.test"), subjectKey: try PrivateKey.generate(kind), issuer: ca, issuerKey: caKey)
        let caPath = try folder.write(ca.pem, to: "ca.pem")
        let leafPath = try folder.write(leaf.pem, to: "leaf.pem")

        let verify = try OpenSSLCommand.run(["verify", "-CAfile", caPath, "-purpose", "sslserver", leafPath])
        #expect(verify.status == 0)
        #expect(verify.output == "\(leafPath): OK\n")
        let text = try OpenSSLCommand.run(["x509", "-in", leafPath, "-noout", "-text"]).output
        #expect(text.contains("Version: 3 (0x2)"))
        #expect(text.contains("Signature Algorithm: \(signatureAlgorithm)"))
    }

    @Test("a leaf from a different CA is rejected")
    func leafFromAnotherCAIsRejected() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (ca, _) = try Self.makeCA()
        let (otherCA, otherKey) = try Self.makeCA(name: "Test Root")  // Same name, different key.
        let leaf = try CertificateIssuer.issue(
            Self.request("leaf.test"), subjectKey: try PrivateKey.generate(.p256), issuer: otherCA, issuerKey: otherKey)
        let verify = try OpenSSLCommand.run([
            "verify", "-CAfile", try folder.write(ca.pem, to: "ca.pem"), try folder.write(leaf.pem, to: "leaf.pem"),
        ])
        #expect(verify.status != 0)
        #expect(verify.output.contains("unable to get local issuer certificate"))
    }

    @Test("an expired leaf is reported expired")
    func expiredLeafIsReportedExpired() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (ca, caKey) = try Self.makeCA()
        let request = Self.request(
            "old.test", notBefore: Self.now.addingTimeInterval(-30 * 86400),
            notAfter: Self.now.addingTimeInterval(-86400))
        let leaf = try CertificateIssuer.issue(
            request, subjectKey: try PrivateKey.generate(.p256), issuer: ca, issuerKey: caKey)
        let verify = try OpenSSLCommand.run([
            "verify", "-CAfile", try folder.write(ca.pem, to: "ca.pem"), try folder.write(leaf.pem, to: "leaf.pem"),
        ])
        #expect(verify.status != 0)
        #expect(verify.output.contains("certificate has expired"))
    }

    @Test("names, validity, serial and fingerprint read back exactly")
    func fieldsReadBack() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (ca, caKey) = try Self.makeCA()
        let notBefore = Date(timeIntervalSince1970: 1_700_000_000.75)
        let notAfter = Date(timeIntervalSince1970: 2_600_000_000)  // After 2049: GeneralizedTime.
        let request = CertificateRequest(
            commonName: "Ledger Service é", dnsNames: ["ledger.internal", "localhost"],
            ipAddresses: ["127.0.0.1", "::1", "2001:db8::10"], uris: ["spiffe://subscriptions/ledger"],
            notBefore: notBefore, notAfter: notAfter, serialNumber: 0x0123_4567_89AB_CDEF)
        let leaf = try CertificateIssuer.issue(
            request, subjectKey: try PrivateKey.generate(.p256), issuer: ca, issuerKey: caKey)

        #expect(leaf.subjectCommonName == "Ledger Service é")
        #expect(
            leaf.subjectAlternativeNames == [
                .dns("ledger.internal"), .dns("localhost"), .ip("127.0.0.1"), .ip("::1"), .ip("2001:db8::10"),
                .uri("spiffe://subscriptions/ledger"),
            ])
        #expect(leaf.notBefore == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(leaf.notAfter == notAfter)
        let path = try folder.write(leaf.pem, to: "leaf.pem")
        #expect(leaf.sha256Fingerprint.count == 64)
        #expect(leaf.sha256Fingerprint == (try OpenSSLCommand.sha256Fingerprint(path: path)))
        let dates = try OpenSSLCommand.run(["x509", "-in", path, "-noout", "-serial", "-startdate", "-enddate"])
        #expect(
            dates.output
                == "serial=0123456789ABCDEF\nnotBefore=Nov 14 22:13:20 2023 GMT\nnotAfter=May 22 14:13:20 2052 GMT\n")
    }

    @Test("CA and leaf certificates carry the agreed extensions")
    func extensionProfile() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (ca, caKey) = try Self.makeCA(.rsa2048)
        let leaf = try CertificateIssuer.issue(
            Self.request("rsa.test"), subjectKey: try PrivateKey.generate(.rsa2048), issuer: ca, issuerKey: caKey)
        let extensions = "basicConstraints,keyUsage,extendedKeyUsage"
        let caText = try OpenSSLCommand.run([
            "x509", "-in", try folder.write(ca.pem, to: "ca.pem"), "-noout", "-ext", extensions,
        ])
        #expect(
            caText.output == """
                X509v3 Basic Constraints: critical
                    CA:TRUE
                X509v3 Key Usage: critical
                    Certificate Sign, CRL Sign

                """)
        let leafText = try OpenSSLCommand.run([
            "x509", "-in", try folder.write(leaf.pem, to: "leaf.pem"), "-noout", "-ext", extensions,
        ])
        #expect(
            leafText.output == """
                X509v3 Basic Constraints: critical
                    CA:FALSE
                X509v3 Key Usage: critical
                    Digital Signature, Key Encipherment
                X509v3 Extended Key Usage: 
                    TLS Web Server Authentication, TLS Web Client Authentication

                """)
        for certificate in [ca, leaf] {
            #expect(certificate.hasExtension(oid: "2.5.29.14"))  // subjectKeyIdentifier
            #expect(certificate.hasExtension(oid: "2.5.29.35"))  // authorityKeyIdentifier
        }
        #expect(!ca.hasExtension(oid: "2.5.29.17"))  // No subjectAltName requested.
    }

    @Test("custom OIDs become non-critical extensions holding ASN.1 NULL")
    func customExtension() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let (ca, caKey) = try Self.makeCA()
        var request = Self.request("apple.test")
        request.customExtensionOIDs = [Self.appleMarkerOID]
        let leaf = try CertificateIssuer.issue(
            request, subjectKey: try PrivateKey.generate(.p256), issuer: ca, issuerKey: caKey)

        #expect(leaf.hasExtension(oid: Self.appleMarkerOID))
        #expect(!ca.hasExtension(oid: Self.appleMarkerOID))
        #expect(!leaf.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(!leaf.hasExtension(oid: "not an oid"))
        let text = try OpenSSLCommand.run([
            "x509", "-in", try folder.write(leaf.pem, to: "leaf.pem"), "-noout", "-text", "-certopt", "ext_dump",
        ]).output
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let index = try #require(lines.firstIndex(of: "\(Self.appleMarkerOID):"))  // No "critical" after the colon.
        #expect(lines[index + 1].hasPrefix("0000 - 05 00 "))
    }

    @Test("an issuer key that does not match the issuer certificate is refused")
    func mismatchedIssuerKey() throws {
        let (ca, _) = try Self.makeCA()
        let error = #expect(throws: CryptoError.self) {
            try CertificateIssuer.issue(
                Self.request("leaf.test"), subjectKey: try PrivateKey.generate(.p256), issuer: ca,
                issuerKey: try PrivateKey.generate(.p256))
        }
        #expect(error?.message.hasPrefix("issuerKey does not match the issuer certificate") == true)
    }

    @Test(
        "invalid names and OIDs are refused",
        arguments: [
            CertificateRequest(commonName: "x", ipAddresses: ["300.1.1.1"], notBefore: now, notAfter: now),
            CertificateRequest(commonName: "x", dnsNames: ["bücher.example"], notBefore: now, notAfter: now),
            CertificateRequest(commonName: "x", notBefore: now, notAfter: now, customExtensionOIDs: ["apple"]),
            CertificateRequest(commonName: "", notBefore: now, notAfter: now),
        ])
    func invalidRequest(request: CertificateRequest) throws {
        let key = try PrivateKey.generate(.p256)
        #expect(throws: CryptoError.self) { try CertificateIssuer.selfSigned(request, key: key) }
    }
}
