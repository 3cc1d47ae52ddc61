import Crypto
import Foundation
import GooglePlay
import HTTPClient
import TestSupport
import Testing

/// Reading service account JSON key files: what is taken from them, and what is refused with
/// the file and field named but never the key.
@Suite("Google service account key files")
struct GoogleServiceAccountTests {
    /// A key file's fields as Google writes them, with the test key.
    static func fields(pem: String) -> [String: Any] {
        [
            "type": "service_account",
            "project_id": "example-project",
            "private_key_id": GooglePlayHarness.keyID,
            "private_key": pem,
            "client_email": GooglePlayHarness.clientEmail,
            "client_id": "104958374619283746512",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": GooglePlayHarness.tokenURI,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "universe_domain": "googleapis.com",
        ]
    }

    static func write(_ fields: [String: Any]) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        return try TemporaryFile.write(
            String(decoding: data, as: UTF8.self), prefix: "service-account", pathExtension: "json")
    }

    @Test("a key file gives the client email, key id, token URI and the RSA key itself")
    func readsAKeyFile() throws {
        let key = try GooglePlayHarness.sharedKey.get()
        let path = try Self.write(Self.fields(pem: try key.pemPKCS8()))
        defer { TemporaryFile.remove(path) }

        let account = try GoogleServiceAccount(contentsOfFile: path)

        #expect(account.clientEmail == GooglePlayHarness.clientEmail)
        #expect(account.privateKeyID == GooglePlayHarness.keyID)
        #expect(account.tokenURI.absoluteString == "https://oauth2.googleapis.com/token")
        #expect(try account.privateKey.publicKeyPEM() == key.publicKeyPEM())
        #expect(
            account.description
                == "service account \(GooglePlayHarness.clientEmail) (key \(GooglePlayHarness.keyID))")
    }

    @Test(
        "a key file without one of the fields the client needs is refused, naming the file and the field",
        arguments: ["type", "client_email", "private_key", "private_key_id", "token_uri"])
    func missingField(_ field: String) throws {
        let pem = try GooglePlayHarness.sharedKey.get().pemPKCS8()
        var fields = Self.fields(pem: pem)
        fields[field] = nil
        let path = try Self.write(fields)
        defer { TemporaryFile.remove(path) }

        #expect(
            throws: GooglePlayAPIError(.configuration, "the service account key file \(path) has no \(field)")
        ) { try GoogleServiceAccount(contentsOfFile: path) }
    }

    @Test("a file that is not JSON, another type of credential, or a bad field is refused without the key")
    func badFiles() throws {
        let pem = try GooglePlayHarness.sharedKey.get().pemPKCS8()
        let notJSON = try TemporaryFile.write(pem, prefix: "service-account", pathExtension: "json")
        var userCredential = Self.fields(pem: pem)
        userCredential["type"] = "authorized_user"
        let wrongType = try Self.write(userCredential)
        var numeric = Self.fields(pem: pem)
        numeric["client_email"] = 42
        let notString = try Self.write(numeric)
        var garbled = Self.fields(pem: pem)
        garbled["private_key"] =
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ1dC1ub3QtYS1rZXk=\n-----END PRIVATE KEY-----\n"
        let badKey = try Self.write(garbled)
        var ecKey = Self.fields(pem: pem)
        ecKey["private_key"] = try PrivateKey.generate(.p256).pemPKCS8()
        let notRSA = try Self.write(ecKey)
        var plainHTTP = Self.fields(pem: pem)
        plainHTTP["token_uri"] = "http://oauth2.googleapis.com/token"
        let insecure = try Self.write(plainHTTP)
        let paths = [notJSON, wrongType, notString, badKey, notRSA, insecure]
        defer { paths.forEach(TemporaryFile.remove) }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("absent-\(UUID()).json").path
        let expected = [
            notJSON: "the service account key file \(notJSON) is not a JSON object",
            wrongType:
                "the service account key file \(wrongType) has type \"authorized_user\", not \"service_account\"",
            notString: "the service account key file \(notString) has a client_email that is not a string",
            badKey:
                "the service account key file \(badKey) has a private_key that is not an unencrypted PEM private key",
            notRSA: "the service account key file \(notRSA) has a private_key that is not an RSA 2048 key",
            insecure:
                "the service account key file \(insecure) has a token_uri that is neither https nor http to a loopback address",
            missing: "cannot read the service account key file \(missing)",
        ]
        let keyBody = pem.split(separator: "\n")[1]
        for (path, message) in expected {
            let error = #expect(throws: GooglePlayAPIError.self) { try GoogleServiceAccount(contentsOfFile: path) }
            #expect(error == GooglePlayAPIError(.configuration, message))
            #expect(!String(describing: try #require(error)).contains(keyBody))
        }
    }

    @Test("a file larger than 64 KiB is refused unread")
    func oversizedFile() throws {
        let path = try TemporaryFile.write(
            String(repeating: " ", count: GoogleServiceAccount.maxFileBytes + 1), prefix: "service-account",
            pathExtension: "json")
        defer { TemporaryFile.remove(path) }

        #expect(
            throws: GooglePlayAPIError(
                .configuration, "the service account key file \(path) is larger than 65536 bytes")
        ) { try GoogleServiceAccount(contentsOfFile: path) }
    }
}
