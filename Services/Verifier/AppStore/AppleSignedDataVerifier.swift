public import Crypto
public import Foundation

/// Verifies App Store signed data (JWS) and decodes it: notifications, transactions and renewal
/// info. What it checks, in order (an input fails at the first check it does not pass):
///
/// 1. size and shape: a compact JWS of at most `maxBytes`, base64url segments, JSON objects;
/// 2. the header: `alg` is ES256, `x5c` holds exactly three base64 DER certificates;
/// 3. the path: leaf (`x5c[0]`, a P-256 key with OID 1.2.840.113635.100.6.11.1) and intermediate
///    (`x5c[1]`, OID 1.2.840.113635.100.6.2.1) chain to a configured trust anchor, every
///    certificate valid at the payload's `signedDate` (now when it has none). `x5c[2]` is never
///    trusted: only the configured anchors are;
/// 4. the raw R||S ES256 signature over `header.payload` with the leaf's key;
/// 5. the claims: `bundleId`, `environment` (Xcode and LocalTesting data never pass in
///    Production) and, in Production, `appAppleId`.
///
/// Verified pairs of (leaf, intermediate) are cached (bounded, time-limited); the validity
/// periods are still checked for every payload.
public final class AppleSignedDataVerifier: Sendable {
    /// What the verifier accepts.
    public struct Configuration: Sendable {
        /// The app's bundle id.
        public var bundleID: String
        /// The environment data must be signed for.
        public var environment: AppleEnvironment
        /// The app's Apple id, required in Production.
        public var appAppleID: Int64?
        /// The largest JWS accepted, in bytes. A notification is about 19 KB.
        public var maxBytes = 64 * 1024
        /// Cached verified (leaf, intermediate) pairs; 0 turns the cache off.
        public var cacheCapacity = 64
        /// How long a cached pair is trusted without a new path check.
        public var cacheLifetime: Duration = .seconds(15 * 60)
        /// Check validity periods at the current time instead of the payload's `signedDate`
        /// (set with online revocation checks, which speak for now).
        public var validateAtCurrentTime = false

        public init(bundleID: String, environment: AppleEnvironment, appAppleID: Int64? = nil) {
            self.bundleID = bundleID
            self.environment = environment
            self.appAppleID = appAppleID
        }
    }

    /// Apple's extension OIDs: on the WWDR intermediate and on the App Store signing leaf.
    public static let intermediateOID = "1.2.840.113635.100.6.2.1"
    public static let leafOID = "1.2.840.113635.100.6.11.1"

    public let configuration: Configuration
    private let trust: TrustStore
    private let cache: VerifiedChainCache

    /// A verifier trusting `anchors` (Apple Root CA - G3 in Production). Throws `CryptoError`
    /// when an anchor cannot be added, and refuses a Production configuration without an
    /// `appAppleID`.
    public init(anchors: [X509Certificate], configuration: Configuration) throws {
        if configuration.environment == .production && configuration.appAppleID == nil {
            throw AppleVerificationError(.wrongApp, "Production needs the app's Apple id (appAppleId)")
        }
        self.configuration = configuration
        trust = try TrustStore(anchors: anchors)
        cache = VerifiedChainCache(capacity: configuration.cacheCapacity, lifetime: configuration.cacheLifetime)
    }

    /// Cached pairs right now (for metrics and tests).
    public var cachedChains: Int { cache.count }

    // MARK: Typed verification

    /// Verifies a notification's `signedPayload` and decodes it. The nested signed transaction
    /// and renewal info are not verified here (`verifyTransaction`, `verifyRenewalInfo`).
    public func verifyNotification(_ jws: String, now: Date = Date()) throws(AppleVerificationError)
        -> AppleNotification
    {
        let verified = try verifySignature(jws, now: now)
        let notification = try Self.decode(AppleNotification.self, verified.payload, what: "notification")
        let claims = notification.claims
        try checkClaims(bundleID: claims.bundleID, environment: claims.environment, appAppleID: claims.appAppleID)
        return notification
    }

    /// Verifies a signed transaction (`signedTransactionInfo`, a StoreKit 2 `jwsRepresentation`).
    public func verifyTransaction(_ jws: String, now: Date = Date()) throws(AppleVerificationError)
        -> AppleTransaction
    {
        let verified = try verifySignature(jws, now: now)
        let transaction = try Self.decode(AppleTransaction.self, verified.payload, what: "transaction")
        try checkClaims(bundleID: transaction.bundleId, environment: transaction.environment, appAppleID: nil)
        return transaction
    }

    /// Verifies signed renewal info. Renewal info names no bundle id; its environment is checked.
    public func verifyRenewalInfo(_ jws: String, now: Date = Date()) throws(AppleVerificationError)
        -> AppleRenewalInfo
    {
        let verified = try verifySignature(jws, now: now)
        let info = try Self.decode(AppleRenewalInfo.self, verified.payload, what: "renewal info")
        try checkEnvironment(info.environment)
        return info
    }

    // MARK: Signature and chain

    /// A JWS whose signature and certificate path verified; its claims are not checked yet.
    public struct VerifiedJWS: Sendable {
        /// The payload's JSON bytes.
        public let payload: [UInt8]
        /// The time the certificates were checked at.
        public let validationTime: Date
    }

    /// Steps 1–4: shape, header, path and signature; the payload stays unchecked JSON.
    public func verifySignature(_ text: String, now: Date = Date()) throws(AppleVerificationError) -> VerifiedJWS {
        guard text.utf8.count <= configuration.maxBytes else {
            throw AppleVerificationError(
                .malformed, "the JWS is \(text.utf8.count) bytes, more than the \(configuration.maxBytes) accepted")
        }
        let jws: CompactJWS
        do {
            jws = try CompactJWS(text)
        } catch {
            throw AppleVerificationError(.malformed, error.message)
        }
        guard let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any] else {
            throw AppleVerificationError(.malformed, "the JWS header is not a JSON object")
        }
        guard let algorithm = header["alg"] as? String else {
            throw AppleVerificationError(.unsupportedAlgorithm, "the JWS header names no alg")
        }
        guard algorithm == "ES256" else {
            throw AppleVerificationError(
                .unsupportedAlgorithm, "alg \"\(algorithm.prefix(16))\" is not accepted; App Store data is ES256")
        }
        guard let x5c = header["x5c"] as? [Any] else {
            throw AppleVerificationError(.badChain, "the JWS header has no x5c certificate array")
        }
        guard x5c.count == 3 else {
            throw AppleVerificationError(
                .badChain, "x5c must hold 3 certificates (leaf, intermediate, root), not \(x5c.count)")
        }
        var ders: [[UInt8]] = []
        for (index, entry) in x5c.prefix(2).enumerated() {
            guard let text = entry as? String, let der = Base64URL.decodeStandard(text) else {
                throw AppleVerificationError(.badCertificate, "x5c[\(index)] is not a base64 string")
            }
            ders.append(der)
        }
        // The payload is read before it is trusted only for the time to check the chain at.
        let probe = try Self.decode(SignedDateProbe.self, jws.payload, what: "payload")
        let signedAt = probe.signedDate.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        let validationTime = configuration.validateAtCurrentTime ? now : signedAt ?? now
        let leafKey = try verifiedLeafKey(leafDER: ders[0], intermediateDER: ders[1], at: validationTime, now: now)
        let signature: [UInt8]
        do {
            signature = try ECDSASignature.der(fromRaw: jws.signature, coordinateBytes: 32)
        } catch {
            throw AppleVerificationError(
                .badSignature, "the ES256 signature is not a valid R||S pair: \(error.message)")
        }
        guard leafKey.verifySHA256(signature: signature, message: jws.signingInput) else {
            throw AppleVerificationError(.badSignature, "the ES256 signature does not verify with the leaf's key")
        }
        return VerifiedJWS(payload: jws.payload, validationTime: validationTime)
    }

    /// The leaf's key once the path (leaf, intermediate, anchor) holds at `time`: from the
    /// cache, or checked in full and then cached.
    private func verifiedLeafKey(leafDER: [UInt8], intermediateDER: [UInt8], at time: Date, now: Date)
        throws(AppleVerificationError) -> PublicKey
    {
        let cacheKey = leafDER + intermediateDER
        if let entry = cache.lookup(cacheKey, now: now) {
            guard time >= entry.notBefore && time <= entry.notAfter else {
                throw AppleVerificationError(
                    .badCertificate, "a certificate of the chain was not valid at \(Self.format(time))")
            }
            return entry.leafKey
        }
        let leaf: X509Certificate
        let intermediate: X509Certificate
        do {
            leaf = try X509Certificate(der: leafDER)
        } catch {
            throw AppleVerificationError(.badCertificate, "x5c[0] is not a DER certificate")
        }
        do {
            intermediate = try X509Certificate(der: intermediateDER)
        } catch {
            throw AppleVerificationError(.badCertificate, "x5c[1] is not a DER certificate")
        }
        guard leaf.hasExtension(oid: Self.leafOID) else {
            throw AppleVerificationError(.badCertificate, "the leaf lacks Apple's OID \(Self.leafOID)")
        }
        guard intermediate.hasExtension(oid: Self.intermediateOID) else {
            throw AppleVerificationError(.badCertificate, "the intermediate lacks Apple's OID \(Self.intermediateOID)")
        }
        let key: PublicKey
        do {
            key = try PublicKey(certificate: leaf)
        } catch {
            throw AppleVerificationError(.badCertificate, "the leaf's public key cannot be read")
        }
        guard key.algorithm == .ecP256 else {
            throw AppleVerificationError(.badCertificate, "the leaf's key is not an EC P-256 key, as ES256 needs")
        }
        let path: [X509Certificate]
        do {
            path = try trust.verify(leaf: leaf, intermediates: [intermediate], at: time)
        } catch {
            if error.isValidityPeriod {
                throw AppleVerificationError(
                    .badCertificate, "at \(Self.format(time)) the chain did not hold: \(error.description)")
            }
            throw AppleVerificationError(.badChain, "the chain does not lead to a trust anchor: \(error.description)")
        }
        // The path must run through x5c[1] itself, not around it to an anchor.
        guard path.count == 3, path[1].der == intermediateDER else {
            throw AppleVerificationError(.badChain, "the leaf does not chain through x5c[1] to a trust anchor")
        }
        cache.insert(
            cacheKey,
            VerifiedChainCache.Entry(
                leafKey: key, notBefore: path.map(\.notBefore).max()!, notAfter: path.map(\.notAfter).min()!,
                added: now))
        return key
    }

    // MARK: Claims

    private func checkClaims(bundleID: String?, environment: String?, appAppleID: Int64?)
        throws(AppleVerificationError)
    {
        guard let bundleID else { throw AppleVerificationError(.malformed, "the payload names no bundleId") }
        guard bundleID == configuration.bundleID else {
            throw AppleVerificationError(
                .wrongApp, "bundleId \"\(bundleID.prefix(200))\" is not the configured \"\(configuration.bundleID)\"")
        }
        try checkEnvironment(environment)
        if configuration.environment == .production, appAppleID != configuration.appAppleID {
            throw AppleVerificationError(
                .wrongApp,
                "appAppleId \(appAppleID.map(String.init) ?? "(absent)") is not the configured \(configuration.appAppleID!)"
            )
        }
    }

    private func checkEnvironment(_ environment: String?) throws(AppleVerificationError) {
        guard let environment else { throw AppleVerificationError(.malformed, "the payload names no environment") }
        guard environment == configuration.environment.rawValue else {
            throw AppleVerificationError(
                .wrongEnvironment,
                "signed for environment \"\(environment.prefix(40))\", this endpoint takes \(configuration.environment.rawValue)"
            )
        }
    }

    // MARK: Decoding

    private struct SignedDateProbe: Decodable {
        let signedDate: Int64?
    }

    static func decode<T: Decodable>(_ type: T.Type, _ payload: [UInt8], what: String) throws(AppleVerificationError)
        -> T
    {
        do {
            return try JSONDecoder().decode(type, from: Data(payload))
        } catch let DecodingError.keyNotFound(key, _) {
            throw AppleVerificationError(.malformed, "the \(what) has no \(key.stringValue)")
        } catch let DecodingError.typeMismatch(_, context) {
            throw AppleVerificationError(.malformed, "the \(what)'s \(path(context)) has the wrong type")
        } catch let DecodingError.valueNotFound(_, context) {
            throw AppleVerificationError(.malformed, "the \(what)'s \(path(context)) is null")
        } catch {
            throw AppleVerificationError(.malformed, "the \(what) is not a JSON object of the expected shape")
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: date)
    }
}
