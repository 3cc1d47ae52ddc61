import Foundation

/// HTTPS for an `HTTPServer` (TLS 1.3): its key and certificate chain, and the CA whose
/// certificates clients may present, as PEM text. A client need not present one; one it
/// presents is checked against the CA and the clock, and handlers see the result
/// (`HTTPRequest.clientCertificate`).
public struct HTTPServerTLS: Sendable, Equatable {
    public var keyPEM: String
    public var certificatePEM: String
    public var trustPEM: String

    /// Reads the three PEM files; throws naming the one that cannot be read.
    public init(keyPath: String, certificatePath: String, trustPath: String) throws(HTTPServerError) {
        func read(_ path: String) throws(HTTPServerError) -> String {
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
            else { throw HTTPServerError(.badTLSFile, "cannot read the TLS file \(path)") }
            return text
        }
        keyPEM = try read(keyPath)
        certificatePEM = try read(certificatePath)
        trustPEM = try read(trustPath)
    }
}
