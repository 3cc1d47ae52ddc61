public import Crypto
public import Foundation
import HTTPClient

/// A Google Cloud service account as its JSON key file describes it: who it is (`client_email`),
/// the RSA key it signs with and that key's id, and where its assertions are exchanged for access
/// tokens (`token_uri`).
///
/// The private key is secret: `description` shows the email and key id only, and no error made
/// here contains the key or any other contents of the file.
public struct GoogleServiceAccount: Sendable, CustomStringConvertible {
    /// The largest key file read; real ones are about 2.3 KiB.
    public static let maxFileBytes = 64 * 1024

    /// `client_email`, the `iss` of every assertion.
    public let clientEmail: String
    /// `private_key_id`, the `kid` of every assertion.
    public let privateKeyID: String
    /// The RSA 2048 key from `private_key`.
    public let privateKey: PrivateKey
    /// `token_uri`, the `aud` of every assertion and where it is exchanged unless the client is
    /// configured to send it elsewhere.
    public let tokenURI: URL

    /// An account made of its parts (tests and callers that keep keys elsewhere).
    ///
    /// - Throws: `GooglePlayAPIError` with code `.configuration` when the email or key id is
    ///   empty, the key is not RSA 2048, or `tokenURI` is neither https nor http to a loopback
    ///   address.
    public init(clientEmail: String, privateKeyID: String, privateKey: PrivateKey, tokenURI: URL)
        throws(GooglePlayAPIError)
    {
        try self.init(
            clientEmail: clientEmail, privateKeyID: privateKeyID, privateKey: privateKey, tokenURI: tokenURI,
            source: "the service account")
    }

    /// Reads the JSON key file at `path`.
    ///
    /// - Throws: `GooglePlayAPIError` with code `.configuration` naming `path` and the field at
    ///   fault when the file cannot be read, is larger than `maxFileBytes`, is not a JSON object,
    ///   has a `type` other than `service_account`, lacks one of `client_email`, `private_key`,
    ///   `private_key_id`, `token_uri`, or holds one that cannot be used.
    public init(contentsOfFile path: String) throws(GooglePlayAPIError) {
        let unreadable = GooglePlayAPIError(.configuration, "cannot read the service account key file \(path)")
        guard let file = FileHandle(forReadingAtPath: path) else { throw unreadable }
        defer { try? file.close() }
        // One byte past the limit is enough to tell a file that is too large.
        let data: Data
        do {
            data = try file.read(upToCount: Self.maxFileBytes + 1) ?? Data()
        } catch {
            throw unreadable
        }
        try self.init(json: data, source: "file \(path)")
    }

    /// Reads a JSON key from `json`; `source` (a file name, an environment variable) names it in
    /// errors.
    ///
    /// - Throws: `GooglePlayAPIError` with code `.configuration`, as `init(contentsOfFile:)`.
    public init(json: Data, source: String) throws(GooglePlayAPIError) {
        func refuse(_ why: String) -> GooglePlayAPIError {
            GooglePlayAPIError(.configuration, "the service account key \(source) \(why)")
        }
        guard json.count <= Self.maxFileBytes else { throw refuse("is larger than \(Self.maxFileBytes) bytes") }
        guard let object = try? JSONSerialization.jsonObject(with: json), let fields = object as? [String: Any]
        else { throw refuse("is not a JSON object") }
        func string(_ name: String) throws(GooglePlayAPIError) -> String {
            guard let value = fields[name] else { throw refuse("has no \(name)") }
            guard let text = value as? String else { throw refuse("has a \(name) that is not a string") }
            guard !text.isEmpty else { throw refuse("has an empty \(name)") }
            return text
        }
        let type = try string("type")
        guard type == "service_account" else {
            throw refuse("has type \"\(type.printableASCII(limit: 40))\", not \"service_account\"")
        }
        let clientEmail = try string("client_email")
        let privateKeyID = try string("private_key_id")
        let pem = try string("private_key")
        let tokenURIText = try string("token_uri")
        guard let tokenURI = URL(string: tokenURIText) else { throw refuse("has a token_uri that is not a URL") }
        let privateKey: PrivateKey
        do {
            privateKey = try PrivateKey(pem: pem)
        } catch {
            throw refuse("has a private_key that is not an unencrypted PEM private key")
        }
        try self.init(
            clientEmail: clientEmail, privateKeyID: privateKeyID, privateKey: privateKey, tokenURI: tokenURI,
            source: "the service account key \(source)")
    }

    private init(clientEmail: String, privateKeyID: String, privateKey: PrivateKey, tokenURI: URL, source: String)
        throws(GooglePlayAPIError)
    {
        guard !clientEmail.isEmpty, !privateKeyID.isEmpty else {
            throw GooglePlayAPIError(.configuration, "\(source) has an empty client_email or private_key_id")
        }
        guard privateKey.kind == .rsa2048 else {
            throw GooglePlayAPIError(.configuration, "\(source) has a private_key that is not an RSA 2048 key")
        }
        guard tokenURI.isHTTPSOrLoopbackHTTP else {
            throw GooglePlayAPIError(
                .configuration, "\(source) has a token_uri that is neither https nor http to a loopback address")
        }
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.tokenURI = tokenURI
    }

    /// `service account <client_email> (key <private_key_id>)`: never the key.
    public var description: String { "service account \(clientEmail) (key \(privateKeyID))" }
}
