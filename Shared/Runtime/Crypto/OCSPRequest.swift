import COpenSSL
import CShims
public import Foundation

/// An OCSP request (RFC 6960) for one certificate, and the checking of a responder's answer to
/// it. The request's DER goes to the responder by HTTP POST (`application/ocsp-request`); the
/// answer is verified here: signed by the issuer or a responder it delegated to, whose chain
/// leads to the trust store, current, and about this certificate.
// @unchecked: the certificate id is created in init and only read afterwards.
public final class OCSPRequest: @unchecked Sendable {
    /// What the responder says about the certificate.
    public enum Status: Sendable, Equatable {
        case good
        /// Revoked at that time, with the CRL reason code (-1 when none was given).
        case revoked(at: Date, reason: Int)
        /// The responder does not know the certificate.
        case unknown
    }

    /// The request to POST.
    public let der: [UInt8]
    /// The certificate's responder URL (its Authority Information Access), when it names one.
    public let responderURL: String?
    private let certificateID: OpaquePointer

    /// A request for `certificate`, issued by `issuer`. Throws when OpenSSL cannot build it.
    public init(certificate: X509Certificate, issuer: X509Certificate) throws(CryptoError) {
        ERR_clear_error()
        // OCSP_cert_to_id returns a new id (SHA-1 hashes, as responders expect); this object owns it.
        let id = certificate.withHandle { subject in issuer.withHandle { OCSP_cert_to_id(nil, subject, $0) } }
        guard let id else { throw .openSSL("OCSP_cert_to_id failed") }
        guard let request = OCSP_REQUEST_new() else {
            OCSP_CERTID_free(id)
            throw .openSSL("OCSP_REQUEST_new failed")
        }
        defer { OCSP_REQUEST_free(request) }
        // The request takes ownership of the copy it is given.
        guard let copy = OCSP_CERTID_dup(id), OCSP_request_add0_id(request, copy) != nil else {
            OCSP_CERTID_free(id)
            throw .openSSL("OCSP_request_add0_id failed")
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_OCSP_REQUEST(request, &out)
        guard length > 0, let out else {
            OCSP_CERTID_free(id)
            throw .openSSL("i2d_OCSP_REQUEST failed")
        }
        der = Array(UnsafeBufferPointer(start: out, count: Int(length)))
        CRYPTO_free(out, #fileID, #line)
        certificateID = id
        responderURL = certificate.ocspResponderURL
    }

    deinit { OCSP_CERTID_free(certificateID) }

    /// The certificate's status from a DER OCSP response. Throws `CryptoError` when the response
    /// does not parse, is not a success, is not signed by someone `trust` vouches for as the
    /// issuer's responder, does not cover this certificate, or is out of date (five minutes of
    /// clock skew allowed).
    public func status(from response: [UInt8], issuer: X509Certificate, trust: TrustStore) throws(CryptoError) -> Status
    {
        ERR_clear_error()
        var cursor: UnsafePointer<UInt8>?
        let parsed = response.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            cursor = buffer.baseAddress
            return d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw CryptoError(message: "the OCSP response does not parse") }
        defer { OCSP_RESPONSE_free(parsed) }
        let outcome = OCSP_response_status(parsed)
        guard outcome == OCSP_RESPONSE_STATUS_SUCCESSFUL else {
            throw CryptoError(message: "the OCSP responder answered status \(outcome)")
        }
        guard let basic = OCSP_response_get1_basic(parsed) else {
            throw CryptoError(message: "the OCSP response has no basic response")
        }
        defer { OCSP_BASICRESP_free(basic) }
        guard let helpers = cshim_x509_stack_new() else { throw .openSSL("out of memory") }
        defer { cshim_x509_stack_free(helpers) }
        let verified = withExtendedLifetime(issuer) { () -> Int32 in
            _ = issuer.withHandle { cshim_x509_stack_push(helpers, $0) }
            return trust.withStore { OCSP_basic_verify(basic, helpers, $0, 0) }
        }
        guard verified == 1 else { throw .openSSL("the OCSP response's signature or signer is not trusted") }
        var status: Int32 = -1
        var reason: Int32 = -1
        var revoked: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, certificateID, &status, &reason, &revoked, &thisUpdate, &nextUpdate) == 1
        else { throw CryptoError(message: "the OCSP response says nothing about this certificate") }
        guard OCSP_check_validity(thisUpdate, nextUpdate, 300, -1) == 1 else {
            throw .openSSL("the OCSP response is out of date")
        }
        switch status {
        case V_OCSP_CERTSTATUS_GOOD: return .good
        case V_OCSP_CERTSTATUS_REVOKED:
            let at = X509Certificate.date(UnsafePointer(revoked))
            return .revoked(at: at, reason: Int(reason))
        default: return .unknown
        }
    }
}
