import Crypto
import Foundation
import Testing

@Suite("X509Certificate")
struct X509CertificateTests {
    static let appleCertificates = "/work/shared/fixtures/apple/certs"

    static func makeCertificate(_ name: String) throws -> X509Certificate {
        let request = CertificateRequest(
            commonName: name, dnsNames: [name], notBefore: Date(), notAfter: Date().addingTimeInterval(86400))
        return try CertificateIssuer.selfSigned(request, key: try PrivateKey.generate(.p256))
    }

    @Test("PEM and DER round-trip, and the PEM matches openssl's")
    func encodingsRoundTrip() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let certificate = try Self.makeCertificate("round.trip")
        let fromPEM = try X509Certificate(pem: certificate.pem)
        let fromDER = try X509Certificate(der: certificate.der)
        #expect(fromPEM.der == certificate.der)
        #expect(fromDER.der == certificate.der)
        #expect(fromDER.pem == certificate.pem)
        #expect(fromPEM.sha256Fingerprint == certificate.sha256Fingerprint)

        let path = try folder.write(certificate.pem, to: "cert.pem")
        #expect(try OpenSSLCommand.run(["x509", "-in", path]).output == certificate.pem)
    }

    @Test("DER with trailing bytes, garbage PEM and empty input are refused")
    func malformedCertificates() throws {
        let der = try Self.makeCertificate("strict.der").der
        #expect(throws: CryptoError.self) { try X509Certificate(der: der + [0]) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: Array(der.dropLast())) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: []) }
        #expect(throws: CryptoError.self) { try X509Certificate(pem: "not a certificate") }
    }

    @Test("loadPEMChain returns every certificate in file order")
    func loadChain() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let first = try Self.makeCertificate("first")
        let second = try Self.makeCertificate("second")
        let path = try folder.write("leaf\n" + first.pem + "\nintermediate\n" + second.pem, to: "chain.pem")
        let chain = try X509Certificate.loadPEMChain(path: path)
        #expect(chain.map(\.subjectCommonName) == ["first", "second"])
        #expect(chain.map(\.der) == [first.der, second.der])
    }

    @Test("loadPEMChain refuses missing files, files without certificates and corrupt blocks")
    func loadChainFailures() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let good = try Self.makeCertificate("good").pem
        let corrupt = good.replacingOccurrences(of: "\n-----END", with: "!!!!\n-----END")
        let empty = try folder.write("nothing here\n", to: "empty.pem")
        let broken = try folder.write(good + corrupt, to: "broken.pem")
        let missing = folder.path("missing.pem")
        for path in [empty, broken, missing] {
            #expect(throws: CryptoError.self) { try X509Certificate.loadPEMChain(path: path) }
        }
    }

    @Test(
        "the Apple Root CA - G3 fixture reads with its published fingerprint",
        .enabled(
            if: FileManager.default.fileExists(atPath: appleCertificates),
            "skipped: the Apple fixture folder /work/shared/fixtures/apple/certs is absent"))
    func appleRoot() throws {
        let chain = try X509Certificate.loadPEMChain(path: "\(Self.appleCertificates)/AppleRootCA-G3.pem")
        let root = try #require(chain.first)
        #expect(chain.count == 1)
        #expect(root.sha256Fingerprint == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")
        #expect(root.subjectCommonName == "Apple Root CA - G3")
        #expect(root.notBefore == Date(timeIntervalSince1970: 1_398_881_946))  // 2014-04-30 18:19:06 UTC
        #expect(!root.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        let der = try Data(contentsOf: URL(fileURLWithPath: "\(Self.appleCertificates)/AppleRootCA-G3.cer"))
        #expect(try X509Certificate(der: Array(der)).sha256Fingerprint == root.sha256Fingerprint)
    }
}
