import COpenSSL
import CShims
import Crypto
import Foundation
import Glibc
import Wire

/// Reads the names a peer certificate vouches for.
enum PeerIdentity {
    /// SAN DNS names and URIs, then the subject common name; consumes the certificate reference.
    static func names(of certificate: OpaquePointer) -> [String] {
        let wrapped = X509Certificate(takingOwnership: certificate)
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
