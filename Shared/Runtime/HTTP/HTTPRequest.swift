/// One HTTP request as a handler sees it, with the whole body read.
public struct HTTPRequest: Sendable {
    /// The method as the client sent it, e.g. `GET`.
    public let method: String
    /// The percent-decoded path without the query string, e.g. `/v1/health`.
    public let path: String
    /// The percent-decoded query parameters; a name without `=` maps to `""`, a repeated name keeps its last value.
    public let query: [String: String]
    /// The request headers with lowercased names; repeated headers are joined with `", "`.
    public let headers: [String: String]
    /// The request body, at most the server's `maxBodyBytes` long.
    public let body: [UInt8]
    /// The client's IP address as text (`""` when unknown).
    public let clientAddress: String
    /// On HTTPS, the certificate the client presented.
    public let clientCertificate: ClientCertificate

    /// What a client presented on HTTPS.
    public enum ClientCertificate: Sendable, Equatable {
        /// None (or the connection is plaintext).
        case none
        /// A certificate (DER) that chains to the server's trusted CA and is valid now.
        case verified([UInt8])
        /// A certificate that does not chain to the trusted CA or is not valid now.
        case refused
    }

    /// A request with the given parts; `headers` names should already be lowercased.
    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: [UInt8] = [], clientAddress: String = "", clientCertificate: ClientCertificate = .none
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.clientAddress = clientAddress
        self.clientCertificate = clientCertificate
    }
}
