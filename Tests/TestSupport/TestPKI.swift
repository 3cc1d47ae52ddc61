public import Foundation
import Crypto

/// A small PKI written to a folder for tests and local development: a P-256 root CA and, per
/// identity, a P-256 key and a certificate the CA signed.
public enum TestPKI {
    /// Writes `ca.pem` and, for each identity, `<name>.pem` (certificate) and `<name>.key`
    /// (PKCS#8 key, mode 0600) into `directory`, creating it if needed and replacing files of
    /// those names. Each identity certificate has commonName `<name>`, subjectAltNames DNS
    /// `<name>`, DNS `localhost` and IP `127.0.0.1`, and extendedKeyUsage serverAuth and
    /// clientAuth. The CA is valid from before the earliest identity (and now) until after the
    /// latest (and at least a year from now), so only the identities' own dates can make them
    /// expired or not yet valid. The CA's key is not kept.
    ///
    /// Throws `CryptoError` for a name that is not a plain file name (or is "ca") and for
    /// OpenSSL failures, and Foundation's errors when the files cannot be written.
    public static func write(
        to directory: String, caName: String, identities: [(name: String, notBefore: Date, notAfter: Date)]
    ) throws -> TestPKIFiles {
        for identity in identities {
            let name = identity.name
            guard !name.isEmpty, name != "ca", !name.hasPrefix("."), !name.contains("/") else {
                throw CryptoError(message: "identity name \"\(name)\" is not usable as a file name")
            }
        }
        let now = Date()
        let caKey = try PrivateKey.generate(.p256)
        let caRequest = CertificateRequest(
            commonName: caName,
            notBefore: (identities.map(\.notBefore) + [now]).min()!.addingTimeInterval(-3600),
            notAfter: (identities.map(\.notAfter) + [now.addingTimeInterval(365 * 86400)]).max()!.addingTimeInterval(
                3600),
            isCertificateAuthority: true)
        let ca = try CertificateIssuer.selfSigned(caRequest, key: caKey)

        let folder = URL(fileURLWithPath: directory, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let caPath = folder.appendingPathComponent("ca.pem").path
        try write(ca.pem, to: caPath, permissions: 0o644)

        var written: [TestPKIFiles.Identity] = []
        for identity in identities {
            let key = try PrivateKey.generate(.p256)
            let request = CertificateRequest(
                commonName: identity.name, dnsNames: [identity.name, "localhost"], ipAddresses: ["127.0.0.1"],
                notBefore: identity.notBefore, notAfter: identity.notAfter,
                extendedKeyUsage: [.serverAuth, .clientAuth])
            let certificate = try CertificateIssuer.issue(request, subjectKey: key, issuer: ca, issuerKey: caKey)
            let files = TestPKIFiles.Identity(
                name: identity.name,
                certificatePath: folder.appendingPathComponent("\(identity.name).pem").path,
                keyPath: folder.appendingPathComponent("\(identity.name).key").path)
            try write(certificate.pem, to: files.certificatePath, permissions: 0o644)
            try write(key.pemPKCS8(), to: files.keyPath, permissions: 0o600)
            written.append(files)
        }
        return TestPKIFiles(directory: folder.path, caCertificatePath: caPath, identities: written)
    }

    /// Replaces `path` with `text`, created with `permissions` so a key is never world-readable.
    private static func write(_ text: String, to path: String, permissions: Int) throws {
        if FileManager.default.fileExists(atPath: path) {
            try FileManager.default.removeItem(atPath: path)
        }
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: permissions])
        else { throw CryptoError(message: "cannot create \(path)") }
    }
}
