import Crypto
import Foundation
import TestSupport
import Testing

@Suite("TestPKI")
struct TestPKITests {
    @Test("writes a CA and identities that openssl verifies, including expired and future ones")
    func writesVerifiablePKI() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let now = Date()
        let directory = folder.path("pki")  // Created by write(to:).
        let files = try TestPKI.write(
            to: directory, caName: "Subscriptions Test CA",
            identities: [
                (name: "ledger", notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(86400)),
                (name: "expired", notBefore: now.addingTimeInterval(-7200), notAfter: now.addingTimeInterval(-3600)),
                (name: "future", notBefore: now.addingTimeInterval(3600), notAfter: now.addingTimeInterval(7200)),
            ])

        #expect(files.caCertificatePath == "\(directory)/ca.pem")
        #expect(files.identities.map(\.name) == ["ledger", "expired", "future"])
        let contents = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(
            contents == [
                "ca.pem", "expired.key", "expired.pem", "future.key", "future.pem", "ledger.key", "ledger.pem",
            ])
        let ca = try X509Certificate(pem: String(contentsOfFile: files.caCertificatePath, encoding: .utf8))
        #expect(ca.subjectCommonName == "Subscriptions Test CA")

        let ledger = try #require(files["ledger"])
        #expect(ledger.certificatePath == "\(directory)/ledger.pem")
        #expect(ledger.keyPath == "\(directory)/ledger.key")
        for purpose in ["sslserver", "sslclient"] {
            let verify = try OpenSSLCommand.run([
                "verify", "-CAfile", files.caCertificatePath, "-purpose", purpose, ledger.certificatePath,
            ])
            #expect(verify.output == "\(ledger.certificatePath): OK\n")
        }
        let certificate = try X509Certificate(pem: String(contentsOfFile: ledger.certificatePath, encoding: .utf8))
        #expect(certificate.subjectCommonName == "ledger")
        #expect(certificate.subjectAlternativeNames == [.dns("ledger"), .dns("localhost"), .ip("127.0.0.1")])
        #expect(certificate.notBefore == Date(timeIntervalSince1970: (now.timeIntervalSince1970 - 60).rounded(.down)))

        let attributes = try FileManager.default.attributesOfItem(atPath: ledger.keyPath)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let certificateKey = try OpenSSLCommand.run(["x509", "-in", ledger.certificatePath, "-noout", "-pubkey"])
        let privateKey = try OpenSSLCommand.run(["pkey", "-in", ledger.keyPath, "-pubout"])
        #expect(certificateKey.output == privateKey.output)

        let expired = try OpenSSLCommand.run([
            "verify", "-CAfile", files.caCertificatePath, try #require(files["expired"]).certificatePath,
        ])
        #expect(expired.status != 0)
        #expect(expired.output.contains("certificate has expired"))
        let future = try OpenSSLCommand.run([
            "verify", "-CAfile", files.caCertificatePath, try #require(files["future"]).certificatePath,
        ])
        #expect(future.status != 0)
        #expect(future.output.contains("certificate is not yet valid"))
    }

    @Test("refuses identity names that are not plain file names", arguments: ["", "ca", "../escape", ".hidden"])
    func refusesBadNames(name: String) throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        #expect(throws: CryptoError.self) {
            try TestPKI.write(
                to: folder.path("pki"), caName: "CA", identities: [(name: name, notBefore: Date(), notAfter: Date())])
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path("pki")))
    }
}
