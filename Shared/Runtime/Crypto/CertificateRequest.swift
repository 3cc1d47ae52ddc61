public import Foundation

/// What to put in a certificate that `CertificateIssuer` signs.
public struct CertificateRequest: Sendable {
    /// The subject's commonName (the subject holds only this attribute).
    public var commonName: String
    /// subjectAltName DNS names (ASCII).
    public var dnsNames: [String] = []
    /// subjectAltName IP addresses, IPv4 or IPv6 text form.
    public var ipAddresses: [String] = []
    /// subjectAltName URIs (ASCII).
    public var uris: [String] = []
    /// Start of validity; may lie in the past. Stored to whole seconds.
    public var notBefore: Date
    /// End of validity; may lie in the past (expired test certificates). Stored to whole seconds.
    public var notAfter: Date
    /// True for a CA certificate (basicConstraints CA:TRUE, keyUsage keyCertSign and cRLSign).
    public var isCertificateAuthority: Bool = false
    /// extendedKeyUsage purposes; the extension is left out when empty.
    public var extendedKeyUsage: [ExtendedKeyUsage] = []
    /// Dotted OIDs added as non-critical extensions whose value is an ASN.1 NULL (Apple's marker
    /// extensions, for example "1.2.840.113635.100.6.11.1").
    public var customExtensionOIDs: [String] = []
    /// An OCSP responder to name in the Authority Information Access extension.
    public var ocspResponderURL: String? = nil
    /// The serial number; when nil, a random positive 63-bit number from the system's secure generator.
    public var serialNumber: UInt64? = nil

    /// Creates a request; everything but the name and validity period is optional.
    public init(
        commonName: String, dnsNames: [String] = [], ipAddresses: [String] = [], uris: [String] = [],
        notBefore: Date, notAfter: Date, isCertificateAuthority: Bool = false,
        extendedKeyUsage: [ExtendedKeyUsage] = [], customExtensionOIDs: [String] = [], serialNumber: UInt64? = nil
    ) {
        self.commonName = commonName
        self.dnsNames = dnsNames
        self.ipAddresses = ipAddresses
        self.uris = uris
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.isCertificateAuthority = isCertificateAuthority
        self.extendedKeyUsage = extendedKeyUsage
        self.customExtensionOIDs = customExtensionOIDs
        self.serialNumber = serialNumber
    }
}
