/// A purpose listed in a certificate's extendedKeyUsage extension.
public enum ExtendedKeyUsage: String, Sendable, Hashable {
    /// TLS server authentication (1.3.6.1.5.5.7.3.1).
    case serverAuth
    /// TLS client authentication (1.3.6.1.5.5.7.3.2).
    case clientAuth
}
