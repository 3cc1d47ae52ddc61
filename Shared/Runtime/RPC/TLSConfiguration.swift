import CShims
import Foundation
import Glibc
import Wire

/// Files for mutual TLS: this side's certificate chain and key, and the CA that peers'
/// certificates must chain to. TLS 1.3 only. A server always needs its certificate and key and
/// always demands one from the client; a client without them is refused by such a server.
public struct TLSConfiguration: Sendable, Equatable {
    public var certificatePath: String?
    public var keyPath: String?
    public var caPath: String
    /// The name the client checks the server's certificate against; nil means the host it dials.
    public var serverName: String?

    public init(certificatePath: String?, keyPath: String?, caPath: String, serverName: String? = nil) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.caPath = caPath
        self.serverName = serverName
    }
}
