public import Crypto
public import Foundation

/// Verifies App Store signed data (JWS) and decodes it: notifications, transactions and renewal
/// info. What it checks, in order (an input fails at the first check it does not pass):
///
/// 1. size and shape: a compact JWS of at most `maxBytes`, base64url segments, JSON objects;
/// 2. the header: `alg` is ES256, `x5c` holds exactly three base64 DER certificates;
/// 3. the path: leaf (`x5c[0]`, a P-256 key with OID 1.2.840.113635.100.6.11.1) and intermediate
///    (`x5c[1]`, OID 1.2.840.113635.100.6.2.1) chain to a configured trust anchor, every
///    certificate valid at the payload's `signedDate` (now when it has none, or with
///    `validateAtCurrentTime`). `x5c[2]` is never
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
        let notification = try verifiedPayload(jws, as: AppleNotification.self, what: "notification", now: now) {
            $0.signedDate
        }
        let claims = notification.claims
        try checkClaims(bundleID: claims.bundleID, environment: claims.environment)
        try checkAppAppleID(claims.appAppleID)
        return notification
    }

    /// Verifies a signed transaction (`signedTransactionInfo`, a StoreKit 2 `jwsRepresentation`).
    public func verifyTransaction(_ jws: String, now: Date = Date()) throws(AppleVerificationError)
        -> AppleTransaction
    {
        let transaction = try verifiedPayload(
            jws, as: AppleTransaction.self, what: "transaction", now: now,
            flat: { FlatJSON.decode(AppleTransaction.self, from: $0) }, signedDate: { $0.signedDate })
        // A transaction carries no appAppleId: Apple puts it in notifications and app transactions.
        try checkClaims(bundleID: transaction.bundleId, environment: transaction.environment)
        return transaction
    }

    /// Verifies signed renewal info. Renewal info names no bundle id; its environment is checked.
    public func verifyRenewalInfo(_ jws: String, now: Date = Date()) throws(AppleVerificationError)
        -> AppleRenewalInfo
    {
        let info = try verifiedPayload(
            jws, as: AppleRenewalInfo.self, what: "renewal info", now: now,
            flat: { FlatJSON.decode(AppleRenewalInfo.self, from: $0) }, signedDate: { $0.signedDate })
        try checkEnvironment(info.environment)
        return info
    }

    /// Steps 1–4 with the payload decoded as `T` once, before the path is checked: the decoded
    /// `signedDate` is the validation time. When the payload does not decode as `T`, the
    /// validation time comes from reading `signedDate` alone, and `T`'s decoding error is thrown
    /// only after the signature verified, so every input fails with the same error as when the
    /// payload was decoded after the signature. `flat` is `FlatJSON`'s reader for flat types.
    private func verifiedPayload<T: Decodable>(
        _ text: String, as type: T.Type, what: String, now: Date, flat: (([UInt8]) -> T?)? = nil,
        signedDate: (T) -> Int64?
    ) throws(AppleVerificationError) -> T {
        var decoded: Result<T, AppleVerificationError>?
        _ = try verified(text, now: now) { payload throws(AppleVerificationError) -> Int64? in
            let result = Result { () throws(AppleVerificationError) -> T in
                if let value = flat?(payload) { return value }
                return try Self.decode(type, payload, what: what)
            }
            decoded = result
            switch result {
            case .success(let value): return signedDate(value)
            case .failure: return try Self.decode(SignedDateProbe.self, payload, what: "payload").signedDate
            }
        }
        return try decoded!.get()
    }

    // MARK: Signature and chain

    /// A JWS whose signature and certificate path verified; its claims are not checked yet.
    public struct VerifiedJWS: Sendable {
        /// The payload's JSON bytes.
        public let payload: [UInt8]
        /// The time the certificates were checked at.
        public let validationTime: Date
    }

    /// Verifies a signed app transaction (StoreKit's `AppTransaction`): steps 1–4, then its
    /// `bundleId`, its `receiptType` (the environment) and, in Production, its `appAppleId`.
    public func verifyAppTransaction(_ jws: String, now: Date = Date()) throws(AppleVerificationError) -> VerifiedJWS {
        let verified = try verifySignature(jws, now: now)
        let claims = try Self.decode(AppTransactionClaims.self, verified.payload, what: "app transaction")
        try checkClaims(bundleID: claims.bundleId, environment: claims.receiptType)
        try checkAppAppleID(claims.appAppleId)
        return verified
    }

    /// Steps 1–4: shape, header, path and signature; the payload stays unchecked JSON.
    public func verifySignature(_ text: String, now: Date = Date()) throws(AppleVerificationError) -> VerifiedJWS {
        try verified(text, now: now) { payload throws(AppleVerificationError) -> Int64? in
            try Self.decode(SignedDateProbe.self, payload, what: "payload").signedDate
        }
    }

    /// Steps 1–4; `signedDate` reads the payload's `signedDate` (milliseconds) or throws.
    ///
    /// A header segment that named a pair still in the cache is not decoded again: its checks
    /// (JSON, `alg`, `x5c`, base64) depend on its bytes alone and passed when it was cached.
    private func verified(
        _ text: String, now: Date, signedDate: ([UInt8]) throws(AppleVerificationError) -> Int64?
    ) throws(AppleVerificationError) -> VerifiedJWS {
        guard text.utf8.count <= configuration.maxBytes else {
            throw AppleVerificationError(
                .malformed, "the JWS is \(text.utf8.count) bytes, more than the \(configuration.maxBytes) accepted")
        }
        var jws = try Segments(text, cache: cache, now: now)
        let certificates: (leaf: [UInt8], intermediate: [UInt8])?
        if let headerBytes = jws.header {
            certificates = try Self.checkHeader(headerBytes)
        } else {
            certificates = nil
        }
        // The payload is read before it is trusted only for the time to check the chain at.
        let signedAt = try signedDate(jws.payload).map { Date(timeIntervalSince1970: Double($0) / 1000) }
        let validationTime = configuration.validateAtCurrentTime ? now : signedAt ?? now
        let leafKey: PublicKey
        if let known = jws.known, let entry = known.entry ?? cache.lookup(known.pair, now: now) {
            try Self.checkValidity(entry, at: validationTime)
            leafKey = entry.leafKey
        } else {
            let ders: (leaf: [UInt8], intermediate: [UInt8])
            if let certificates {
                ders = certificates
            } else {
                // A known header whose pair expired since: split again without the cache (the
                // same segments), and decoding and checking the header cannot fail.
                jws = try Segments(text, cache: nil, now: now)
                ders = try Self.checkHeader(jws.header ?? [])
            }
            leafKey = try verifiedLeafKey(
                leafDER: ders.leaf, intermediateDER: ders.intermediate,
                header: Array(jws.signingInput[..<jws.headerEnd]), at: validationTime, now: now)
        }
        let signature = try Self.derSignature(jws.signature)
        guard leafKey.verify(signature: signature, sha256: jws.digest ?? Digest.sha256(jws.signingInput)) else {
            throw AppleVerificationError(.badSignature, "the ES256 signature does not verify with the leaf's key")
        }
        return VerifiedJWS(payload: jws.payload, validationTime: validationTime)
    }

    /// Step 2: the header's `alg` and `x5c`; returns the DER of `x5c[0]` and `x5c[1]`.
    private static func checkHeader(_ headerBytes: [UInt8]) throws(AppleVerificationError) -> (
        leaf: [UInt8], intermediate: [UInt8]
    ) {
        guard let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any] else {
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
        return (ders[0], ders[1])
    }

    /// The DER form of a raw R||S ES256 signature; throws `badSignature` when it is not one.
    private static func derSignature(_ raw: [UInt8]) throws(AppleVerificationError) -> [UInt8] {
        do {
            return try ECDSASignature.der(fromRaw: raw, coordinateBytes: 32)
        } catch {
            throw AppleVerificationError(
                .badSignature, "the ES256 signature is not a valid R||S pair: \(error.message)")
        }
    }

    /// Throws `badCertificate` when `time` is outside the cached path's validity.
    private static func checkValidity(_ entry: VerifiedChainCache.Entry, at time: Date) throws(AppleVerificationError) {
        guard time >= entry.notBefore && time <= entry.notAfter else {
            throw AppleVerificationError(
                .badCertificate, "a certificate of the chain was not valid at \(Self.format(time))")
        }
    }

    /// The leaf's key once the path (leaf, intermediate, anchor) holds at `time`: from the
    /// cache, or checked in full and then cached with `header`, the JWS header segment that
    /// named the pair.
    private func verifiedLeafKey(
        leafDER: [UInt8], intermediateDER: [UInt8], header: [UInt8], at time: Date, now: Date
    ) throws(AppleVerificationError) -> PublicKey {
        let cacheKey = leafDER + intermediateDER
        if let entry = cache.lookup(cacheKey, now: now) {
            try Self.checkValidity(entry, at: time)
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
                added: now),
            header: header)
        return key
    }

    // MARK: Claims

    private func checkClaims(bundleID: String?, environment: String?) throws(AppleVerificationError) {
        guard let bundleID else { throw AppleVerificationError(.malformed, "the payload names no bundleId") }
        guard bundleID == configuration.bundleID else {
            throw AppleVerificationError(
                .wrongApp, "bundleId \"\(bundleID.prefix(200))\" is not the configured \"\(configuration.bundleID)\"")
        }
        try checkEnvironment(environment)
    }

    /// In Production, the app's Apple id must be the configured one (data that carries one).
    private func checkAppAppleID(_ appAppleID: Int64?) throws(AppleVerificationError) {
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

    /// What an app transaction is checked by.
    private struct AppTransactionClaims: Decodable {
        let bundleId: String?
        let receiptType: String?
        let appAppleId: Int64?
    }

    /// `payload` decoded as `type` by `JSONDecoder`, whose errors become `malformed` refusals.
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

extension AppleSignedDataVerifier {
    /// The three segments of a compact JWS, decoded as `CompactJWS` decodes them, without its
    /// per-character work: the dots are found in the contiguous UTF-8, and base64url is decoded
    /// with a table. Anything this fast path does not take (a wrong number of dots, a character
    /// outside the alphabet, an impossible length, non-zero padding bits, an empty header or
    /// signature, a string without contiguous UTF-8) goes through `CompactJWS` itself, which
    /// decides and words the refusal.
    struct Segments {
        /// The decoded header; nil when the header segment is one the cache knows (`known`).
        let header: [UInt8]?
        /// The pair a known header named, as the cache keys it, and the hash state after it.
        let known: VerifiedChainCache.Known?
        let payload: [UInt8]
        let signature: [UInt8]
        /// `header "." payload` as written, the bytes the signature covers; empty when the
        /// header is known (`digest` is their hash then).
        let signingInput: [UInt8]
        /// Where the header segment ends in `signingInput`.
        let headerEnd: Int
        /// The SHA-256 of the signing input, when a known header's hash state gave it.
        let digest: [UInt8]?

        /// Splits and decodes `text`; throws `malformed` as `CompactJWS` does. Without a cache
        /// every header is decoded; `now` is when a known header's pair must still be fresh.
        init(_ text: String, cache: VerifiedChainCache?, now: Date) throws(AppleVerificationError) {
            if let fast = text.utf8.withContiguousStorageIfAvailable({ Self.fast($0, cache: cache, now: now) }),
                let fast
            {
                self = fast
                return
            }
            let jws: CompactJWS
            do {
                jws = try CompactJWS(text)
            } catch {
                throw AppleVerificationError(.malformed, error.message)
            }
            header = jws.header
            known = nil
            payload = jws.payload
            signature = jws.signature
            signingInput = jws.signingInput
            headerEnd = jws.signingInput.firstIndex(of: UInt8(ascii: ".")) ?? jws.signingInput.count
            digest = nil
        }

        private init(
            header: [UInt8]?, known: VerifiedChainCache.Known?, payload: [UInt8], signature: [UInt8],
            signingInput: [UInt8], headerEnd: Int, digest: [UInt8]?
        ) {
            self.header = header
            self.known = known
            self.payload = payload
            self.signature = signature
            self.signingInput = signingInput
            self.headerEnd = headerEnd
            self.digest = digest
        }

        /// The segments of well-formed input; nil for anything `CompactJWS` must judge.
        private static func fast(_ text: UnsafeBufferPointer<UInt8>, cache: VerifiedChainCache?, now: Date) -> Segments?
        {
            guard let first = dot(in: text, from: 0), let second = dot(in: text, from: first + 1),
                dot(in: text, from: second + 1) == nil
            else { return nil }
            guard let payload = decode(text[(first + 1)..<second]),
                let signature = decode(text[(second + 1)...]), !signature.isEmpty
            else { return nil }
            let headerSegment = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[..<first]))
            // A known header is neither copied nor hashed again: its hash state goes on with the
            // payload segment (the dot is in the state).
            if let known = cache?.known(header: headerSegment, now: now),
                let digest = known.prefix.finish(
                    UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[(first + 1)..<second])))
            {
                return Segments(
                    header: nil, known: known, payload: payload, signature: signature, signingInput: [],
                    headerEnd: 0, digest: digest)
            }
            guard let header = decode(text[..<first]), !header.isEmpty else { return nil }
            return Segments(
                header: header, known: nil, payload: payload, signature: signature,
                signingInput: Array(text[..<second]), headerEnd: first, digest: nil)
        }

        /// The offset of the first "." at or after `start`, or nil.
        private static func dot(in text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
            guard start < text.count, let base = text.baseAddress,
                let found = memchr(base + start, Int32(UInt8(ascii: ".")), text.count - start)
            else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }

        /// A segment's bytes decoded when they are canonical base64url; nil otherwise.
        private static func decode(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> [UInt8]? {
            Base64URL.decodeCanonical(utf8: UnsafeBufferPointer(rebasing: text))
        }
    }
}
