import COpenSSL
import CShims
public import Foundation

/// Trust anchors (OpenSSL `X509_STORE*`) against which certificate paths are verified at a
/// chosen time. Built once; verifications may run concurrently.
// @unchecked: the store is filled in init and only read afterwards, which OpenSSL allows from
// many threads at once.
public final class TrustStore: @unchecked Sendable {
    /// Why a path did not verify.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The path could be built but a certificate in it is outside its validity period at
        /// the verification time.
        public let isValidityPeriod: Bool
        /// OpenSSL's reason, and at which depth of the path (0 is the leaf).
        public let description: String
    }

    private let store: OpaquePointer
    /// The anchors, kept alive as long as the store refers to them.
    public let anchors: [X509Certificate]

    /// A store trusting exactly `anchors`. Throws when one cannot be added.
    public init(anchors: [X509Certificate]) throws(CryptoError) {
        guard let store = X509_STORE_new() else { throw .openSSL("X509_STORE_new failed") }
        for anchor in anchors {
            // The store takes its own reference to each certificate.
            guard anchor.withHandle({ X509_STORE_add_cert(store, $0) }) == 1 else {
                X509_STORE_free(store)
                throw .openSSL("cannot add a trust anchor")
            }
        }
        self.store = store
        self.anchors = anchors
    }

    deinit { X509_STORE_free(store) }

    /// Lends the `X509_STORE*` for the duration of `body`.
    func withStore<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T {
        defer { withExtendedLifetime(self) {} }
        return try body(store)
    }

    /// Verifies the path `leaf` → `intermediates`… → an anchor, with every validity period
    /// checked at `time`, and returns the path OpenSSL built (leaf first, anchor last).
    /// Certificates other than the anchors are never trusted on their own. Throws `Failure`.
    @discardableResult
    public func verify(leaf: X509Certificate, intermediates: [X509Certificate], at time: Date) throws(Failure)
        -> [X509Certificate]
    {
        guard let context = X509_STORE_CTX_new(), let untrusted = cshim_x509_stack_new() else {
            throw Failure(isValidityPeriod: false, description: "out of memory")
        }
        defer {
            X509_STORE_CTX_free(context)
            cshim_x509_stack_free(untrusted)
            ERR_clear_error()
        }
        return try withExtendedLifetime((leaf, intermediates)) { () throws(Failure) -> [X509Certificate] in
            for certificate in intermediates {
                // The stack borrows the certificates; they outlive it (withExtendedLifetime).
                _ = certificate.withHandle { cshim_x509_stack_push(untrusted, $0) }
            }
            let initialized = leaf.withHandle { X509_STORE_CTX_init(context, store, $0, untrusted) }
            guard initialized == 1 else {
                throw Failure(isValidityPeriod: false, description: "X509_STORE_CTX_init failed")
            }
            X509_STORE_CTX_set_time(context, 0, time_t(time.timeIntervalSince1970.rounded(.down)))
            guard X509_verify_cert(context) == 1 else {
                let code = X509_STORE_CTX_get_error(context)
                let depth = X509_STORE_CTX_get_error_depth(context)
                let reason = String(cString: X509_verify_cert_error_string(Int(code)))
                let validity = [X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID].contains(code)
                return try { () throws(Failure) -> [X509Certificate] in
                    throw Failure(isValidityPeriod: validity, description: "\(reason) (depth \(depth))")
                }()
            }
            guard let chain = X509_STORE_CTX_get0_chain(context) else { return [] }
            var path: [X509Certificate] = []
            for index in 0..<cshim_x509_stack_count(chain) {
                guard let certificate = cshim_x509_stack_value(chain, index) else { continue }
                // The chain belongs to the context: take a reference of our own.
                X509_up_ref(certificate)
                path.append(X509Certificate(takingOwnership: certificate))
            }
            return path
        }
    }
}
