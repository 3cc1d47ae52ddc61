import Crypto
import Foundation
import Testing

@Suite("PrivateKey")
struct PrivateKeyTests {
    @Test("a generated key round-trips through PKCS#8 PEM", arguments: [PrivateKey.Kind.p256, .p384, .rsa2048])
    func pkcs8RoundTrip(kind: PrivateKey.Kind) throws {
        let key = try PrivateKey.generate(kind)
        #expect(key.kind == kind)
        let pem = try key.pemPKCS8()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let reloaded = try PrivateKey(pem: pem)
        #expect(reloaded.kind == kind)
        #expect(try reloaded.pemPKCS8() == pem)
    }

    @Test(
        "traditional PEM keys made by openssl load and convert to the same PKCS#8",
        arguments: [
            (["ecparam", "-name", "prime256v1", "-genkey", "-noout"], "EC PRIVATE KEY", PrivateKey.Kind.p256),
            // Without -noout: an EC PARAMETERS block comes before the key.
            (["ecparam", "-name", "secp384r1", "-genkey"], "EC PRIVATE KEY", .p384),
            (["genrsa", "-traditional", "2048"], "RSA PRIVATE KEY", .rsa2048),
        ])
    func traditionalPEM(command: [String], label: String, kind: PrivateKey.Kind) throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.path("key.pem")
        #expect(try OpenSSLCommand.run([command[0], "-out", path] + command.dropFirst()).status == 0)
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        #expect(pem.contains("-----BEGIN \(label)-----"))

        let key = try PrivateKey(pem: pem)
        #expect(key.kind == kind)
        let pkcs8 = try OpenSSLCommand.run(["pkcs8", "-topk8", "-nocrypt", "-in", path])
        #expect(pkcs8.status == 0)
        #expect(try key.pemPKCS8() == pkcs8.output)
    }

    @Test("an encrypted key is refused without prompting for a password")
    func encryptedKey() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.path("key.pem")
        let generated = try OpenSSLCommand.run([
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-256-cbc", "-pass",
            "pass:secret",
            "-out", path,
        ])
        #expect(generated.status == 0)
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        #expect(pem.contains("ENCRYPTED PRIVATE KEY"))
        #expect(throws: CryptoError.self) { try PrivateKey(pem: pem) }
    }

    @Test("malformed input is refused and not echoed in the error")
    func malformedKey() throws {
        let input = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END PRIVATE KEY-----\n"
        let error = #expect(throws: CryptoError.self) { try PrivateKey(pem: input) }
        let message = try #require(error?.message)
        #expect(message.hasPrefix("cannot read a private key from PEM"))
        #expect(!message.contains("c2VjcmV0"))
        #expect(error?.description == message)
    }
}
