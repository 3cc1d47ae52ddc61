/// One entry of a certificate's subjectAltName extension (the kinds this module reads).
public enum SubjectAlternativeName: Sendable, Hashable {
    /// A DNS name, such as `localhost`.
    case dns(String)
    /// An IPv4 (`127.0.0.1`) or IPv6 (`::1`) address in its usual text form.
    case ip(String)
    /// A URI, such as `spiffe://example/ledger`.
    case uri(String)
    /// An email address (rfc822Name).
    case email(String)
}
