import COpenSSL
import CShims
import Crypto
import Foundation
import Glibc
import Wire

/// Reads the names a peer certificate vouches for.
public enum PeerIdentity {
    /// SAN DNS names and URIs, then the subject common name; consumes the certificate reference.
    static func names(of certificate: OpaquePointer) -> [String] {
        names(of: X509Certificate(takingOwnership: certificate))
    }

    /// The names of the certificate `der` (a client certificate an HTTPS listener checked), as
    /// for a connection's peer; empty when it does not parse.
    public static func names(ofDER der: [UInt8]) -> [String] {
        (try? X509Certificate(der: der)).map(names(of:)) ?? []
    }

    private static func names(of wrapped: X509Certificate) -> [String] {
        var names: [String] = []
        for name in wrapped.subjectAlternativeNames {
            switch name {
            case .dns(let value), .uri(let value): names.append(value)
            default: break
            }
        }
        if let commonName = wrapped.subjectCommonName, !names.contains(commonName) { names.append(commonName) }
        return names
    }
}
