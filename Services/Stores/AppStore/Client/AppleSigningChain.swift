public import Crypto
public import Foundation

/// A certificate chain shaped like Apple's App Store signing chain, generated here, and the
/// signing of payloads with it: a P-384 root, an intermediate with OID 1.2.840.113635.100.6.2.1
/// and a P-256 leaf with OID 1.2.840.113635.100.6.11.1. For the store simulator, tests and
/// benchmarks; a verifier trusts it only when its root is configured as an anchor.
public struct AppleSigningChain: Sendable {
    public let root: X509Certificate
    public let intermediate: X509Certificate
    public let leaf: X509Certificate
    public let rootKey: PrivateKey
    public let intermediateKey: PrivateKey
    public let leafKey: PrivateKey

    /// A chain from parts made elsewhere (a leaf issued differently, say).
    public init(
        root: X509Certificate, intermediate: X509Certificate, leaf: X509Certificate, rootKey: PrivateKey,
        intermediateKey: PrivateKey, leafKey: PrivateKey
    ) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
    }

    /// What to leave out or change, for chains that must be refused.
    public struct Options: Sendable {
        public var leafOID = true
        public var intermediateOID = true
        /// The leaf's key; Apple's is P-256.
        public var leafKind: PrivateKey.Kind = .p256
        public var leafNotBefore: Date?
        public var leafNotAfter: Date?
        /// An OCSP responder named in the leaf and the intermediate.
        public var ocspResponderURL: String?
        public init() {}
    }

    /// Generates a fresh chain valid from a day before `now` for ten years (the leaf as
    /// `options` say). Throws `CryptoError` when OpenSSL fails.
    public static func generate(now: Date = Date(), options: Options = Options()) throws(CryptoError) -> Self {
        let start = now.addingTimeInterval(-86_400)
        let end = now.addingTimeInterval(10 * 365 * 86_400)
        let rootKey = try PrivateKey.generate(.p384)
        let root = try CertificateIssuer.selfSigned(
            CertificateRequest(
                commonName: "Test Root CA - G3", notBefore: start, notAfter: end, isCertificateAuthority: true),
            key: rootKey)
        let intermediateKey = try PrivateKey.generate(.p384)
        var intermediateRequest = CertificateRequest(
            commonName: "Test Worldwide Developer Relations Certification Authority", notBefore: start, notAfter: end,
            isCertificateAuthority: true,
            customExtensionOIDs: options.intermediateOID ? [AppleSignedDataVerifier.intermediateOID] : [])
        intermediateRequest.ocspResponderURL = options.ocspResponderURL
        let intermediate = try CertificateIssuer.issue(
            intermediateRequest, subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)
        let leafKey = try PrivateKey.generate(options.leafKind)
        var leafRequest = CertificateRequest(
            commonName: "Test StoreKit Signing", notBefore: options.leafNotBefore ?? start,
            notAfter: options.leafNotAfter ?? end,
            customExtensionOIDs: options.leafOID ? [AppleSignedDataVerifier.leafOID] : [])
        leafRequest.ocspResponderURL = options.ocspResponderURL
        let leaf = try CertificateIssuer.issue(
            leafRequest, subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
        return Self(
            root: root, intermediate: intermediate, leaf: leaf, rootKey: rootKey, intermediateKey: intermediateKey,
            leafKey: leafKey)
    }

    /// The header Apple writes: ES256 and `x5c` of leaf, intermediate and root, standard base64 DER.
    public var header: [String: any Sendable] {
        ["alg": "ES256", "x5c": [leaf, intermediate, root].map { Data($0.der).base64EncodedString() }]
    }

    /// Signs `payload` (JSON bytes) under `header` (Apple's when nil) with the leaf's key.
    public func sign(payload: [UInt8], header: [String: any Sendable]? = nil) throws(CryptoError) -> String {
        let headerBytes: [UInt8]
        do {
            headerBytes = [UInt8](
                try JSONSerialization.data(withJSONObject: header ?? self.header, options: [.sortedKeys]))
        } catch {
            throw CryptoError(message: "the header is not JSON-serializable")
        }
        return try CompactJWS.sign(header: headerBytes, payload: payload, key: leafKey, algorithm: .es256)
    }

    /// Signs a JSON object.
    public func sign(_ payload: [String: any Sendable], header: [String: any Sendable]? = nil) throws(CryptoError)
        -> String
    {
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
        } catch {
            throw CryptoError(message: "the payload is not JSON-serializable")
        }
        return try sign(payload: bytes, header: header)
    }
}
