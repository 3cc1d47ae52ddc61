public import Crypto
public import Foundation
import HTTPClient
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Online revocation checking (OCSP) of the certificates that sign App Store data: the leaf
/// (issued by the intermediate) and the intermediate (issued by the trust anchor). A network
/// failure, a responder error or an answer that cannot be verified is `retryable` — it proves
/// nothing about the data; only a verified `revoked` or `unknown` answer refuses it
/// (`bad_certificate`). Answers are cached per certificate for `cacheLifetime`.
public final class AppleRevocationChecker: Sendable {
    /// POSTs an OCSP request to a responder and returns the DER answer; throws on any failure.
    public typealias Fetch = @Sendable (_ url: URL, _ request: [UInt8]) async throws -> [UInt8]

    private let trust: TrustStore
    private let fetch: Fetch
    private let cacheLifetime: TimeInterval
    private let cache = Mutex<[[UInt8]: (status: OCSPRequest.Status, until: Date)]>([:])

    /// A checker trusting `anchors` for responder signatures.
    public init(anchors: [X509Certificate], cacheLifetime: Duration = .seconds(3600), fetch: Fetch? = nil) throws {
        trust = try TrustStore(anchors: anchors)
        self.cacheLifetime = cacheLifetime.timeInterval
        self.fetch = fetch ?? Self.post
    }

    /// Checks the chain in `jws`'s header (which the caller has verified). Throws
    /// `AppleVerificationError` with `.badCertificate` for a revoked or unknown certificate,
    /// `.retryable` when the status cannot be established now.
    public func check(_ jws: String, now: Date = Date()) async throws(AppleVerificationError) {
        let (leafDER, intermediateDER) = try Self.chainDER(of: jws)
        // Both answers known and fresh: no certificate to parse, no path to verify again (it was
        // verified when they were cached).
        if let leafStatus = cached(leafDER, now), let intermediateStatus = cached(intermediateDER, now) {
            try Self.verdict(leafStatus, "the leaf")
            try Self.verdict(intermediateStatus, "the intermediate")
            return
        }
        guard let leaf = try? X509Certificate(der: leafDER),
            let intermediate = try? X509Certificate(der: intermediateDER)
        else { throw Self.noChain }
        let path: [X509Certificate]
        do {
            path = try trust.verify(leaf: intermediate, intermediates: [], at: now)
        } catch {
            throw AppleVerificationError(.badChain, "the intermediate does not lead to a trust anchor: \(error)")
        }
        guard path.count >= 2 else { throw AppleVerificationError(.badChain, "the intermediate is itself an anchor") }
        try await check(leaf, issuer: intermediate, what: "the leaf", now: now)
        try await check(intermediate, issuer: path[1], what: "the intermediate", now: now)
    }

    private func check(_ certificate: X509Certificate, issuer: X509Certificate, what: String, now: Date)
        async throws(AppleVerificationError)
    {
        let key = certificate.der
        if let status = cached(key, now) { return try Self.verdict(status, what) }
        let request: OCSPRequest
        do {
            request = try OCSPRequest(certificate: certificate, issuer: issuer)
        } catch {
            throw AppleVerificationError(.retryable, "cannot build an OCSP request for \(what): \(error)")
        }
        guard let address = request.responderURL, let url = URL(string: address) else {
            throw AppleVerificationError(.badCertificate, "\(what) names no OCSP responder to check it with")
        }
        let answer: [UInt8]
        do {
            answer = try await fetch(url, request.der)
        } catch {
            throw AppleVerificationError(.retryable, "the OCSP responder for \(what) did not answer: \(error)")
        }
        let status: OCSPRequest.Status
        do {
            status = try request.status(from: answer, issuer: issuer, trust: trust)
        } catch {
            throw AppleVerificationError(.retryable, "the OCSP answer for \(what) cannot be used: \(error.message)")
        }
        cache.withLock { $0[key] = (status, now.addingTimeInterval(cacheLifetime)) }
        try Self.verdict(status, what)
    }

    private static func verdict(_ status: OCSPRequest.Status, _ what: String) throws(AppleVerificationError) {
        switch status {
        case .good: return
        case .revoked(let at, _):
            throw AppleVerificationError(
                .badCertificate, "\(what) was revoked at \(AppleSignedDataVerifier.format(at))")
        case .unknown: throw AppleVerificationError(.badCertificate, "the OCSP responder does not know \(what)")
        }
    }

    /// The cached answer about the certificate with this DER, while it is fresh.
    private func cached(_ der: [UInt8], _ now: Date) -> OCSPRequest.Status? {
        cache.withLock { cache in cache[der].flatMap { $0.until > now ? $0.status : nil } }
    }

    private static let noChain = AppleVerificationError(.malformed, "the JWS header has no usable x5c chain")

    /// The DER of the leaf and the intermediate of a JWS header's `x5c`.
    static func chainDER(of jws: String) throws(AppleVerificationError) -> ([UInt8], [UInt8]) {
        guard let parsed = try? CompactJWS(jws),
            let header = try? JSONSerialization.jsonObject(with: Data(parsed.header)) as? [String: Any],
            let x5c = header["x5c"] as? [String], x5c.count == 3,
            let leaf = Base64URL.decodeStandard(x5c[0]), let intermediate = Base64URL.decodeStandard(x5c[1])
        else { throw noChain }
        return (leaf, intermediate)
    }

    /// HTTP POST with `application/ocsp-request`, ten seconds at most, 200 only, 1 MiB at most,
    /// through the shared transport (no redirects followed, nothing past the limit read).
    static func post(_ url: URL, _ body: [UInt8]) async throws -> [UInt8] {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue("application/ocsp-request", forHTTPHeaderField: "Content-Type")
        switch await ocspTransport.perform(request) {
        case .success(let response) where response.status == 200:
            return [UInt8](response.body)
        case .success(let response):
            throw AppStoreAPIError(.server, "the OCSP responder answered HTTP \(response.status)")
        case .failure(.tooLarge):
            throw AppStoreAPIError(.invalidResponse, "the OCSP answer is over 1 MiB")
        case .failure(let failure):
            throw AppStoreAPIError(.network, "the OCSP responder cannot be reached: \(failure)")
        }
    }

    private static let ocspTransport = HTTPClientTransport(requestTimeout: 10, maxResponseBytes: 1 << 20)
}
