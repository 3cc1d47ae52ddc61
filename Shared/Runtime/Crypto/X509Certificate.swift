import COpenSSL
import CShims
public import Foundation

/// An X.509 certificate (OpenSSL `X509*`), read from PEM or DER, issued by `CertificateIssuer`, or
/// adopted from OpenSSL (for example a TLS peer's certificate).
// @unchecked: the X509 is never modified after init, and OpenSSL allows concurrent read-only use.
public final class X509Certificate: @unchecked Sendable {
    private let handle: OpaquePointer

    /// Adopts an `X509*` reference (for example from `SSL_get1_peer_certificate`); the
    /// certificate frees it when it goes away.
    public init(takingOwnership pointer: OpaquePointer) {
        handle = pointer
    }

    deinit { X509_free(handle) }

    /// Reads the first certificate in `pem`. Throws `CryptoError` if there is none or it is malformed.
    public convenience init(pem: String) throws(CryptoError) {
        ERR_clear_error()
        let bio = try MemoryBIO(bytes: pem.utf8)
        guard let certificate = bio.withHandle({ PEM_read_bio_X509($0, nil, nil, nil) }) else {
            throw .openSSL("cannot read a certificate from PEM")
        }
        self.init(takingOwnership: certificate)
    }

    /// Reads a DER-encoded certificate, which must fill `der` exactly. Throws `CryptoError` otherwise.
    public convenience init(der: [UInt8]) throws(CryptoError) {
        guard !der.isEmpty else { throw CryptoError(message: "cannot read a certificate from empty DER") }
        ERR_clear_error()
        var consumed = 0
        let certificate = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            // d2i_X509 advances `cursor` past the bytes it decoded.
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            if let cursor, let start = buffer.baseAddress { consumed = cursor - start }
            return certificate
        }
        guard let certificate else { throw .openSSL("cannot read a certificate from DER") }
        guard consumed == der.count else {
            X509_free(certificate)
            throw CryptoError(message: "cannot read a certificate from DER: \(der.count - consumed) trailing bytes")
        }
        self.init(takingOwnership: certificate)
    }

    /// Reads every certificate in the PEM file at `path`, in file order (for example a chain or a
    /// bundle of roots). Throws `CryptoError` if the file cannot be read, holds no certificate, or
    /// holds a malformed one.
    public static func loadPEMChain(path: String) throws(CryptoError) -> [X509Certificate] {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CryptoError(message: "cannot read \(path): \(error.localizedDescription)")
        }
        ERR_clear_error()
        let bio = try MemoryBIO(bytes: contents)
        var certificates: [X509Certificate] = []
        while let certificate = bio.withHandle({ PEM_read_bio_X509($0, nil, nil, nil) }) {
            certificates.append(X509Certificate(takingOwnership: certificate))
        }
        // Running out of input ends the loop with PEM_R_NO_START_LINE; anything else is a bad block.
        let last = ERR_peek_last_error()
        guard ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE else {
            throw .openSSL("cannot read certificate \(certificates.count + 1) in \(path)")
        }
        ERR_clear_error()
        guard !certificates.isEmpty else { throw CryptoError(message: "no certificate in \(path)") }
        return certificates
    }

    /// The DER encoding (empty only if OpenSSL cannot encode the certificate).
    public var der: [UInt8] {
        withHandle { certificate in
            let length = i2d_X509(certificate, nil)
            guard length > 0 else { return [] }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            let written = bytes.withUnsafeMutableBufferPointer { buffer in
                var cursor = buffer.baseAddress
                return i2d_X509(certificate, &cursor)
            }
            return written == length ? bytes : []
        }
    }

    /// The PEM encoding (`BEGIN CERTIFICATE`, 64-column base64, trailing newline).
    public var pem: String {
        let base64 = Data(der).base64EncodedString()
        var lines = ["-----BEGIN CERTIFICATE-----"]
        var start = base64.startIndex
        while start < base64.endIndex {
            let end = base64.index(start, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[start..<end]))
            start = end
        }
        lines.append("-----END CERTIFICATE-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The first commonName (CN) in the subject, or nil if there is none.
    public var subjectCommonName: String? {
        withHandle { certificate -> String? in
            guard let name = X509_get_subject_name(certificate) else { return nil }
            let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
            guard index >= 0, let entry = X509_NAME_get_entry(name, index) else { return nil }
            return Self.utf8(X509_NAME_ENTRY_get_data(entry))
        }
    }

    /// The DNS, IP, URI and email entries of the subjectAltName extension, in certificate order.
    /// Other kinds of name are left out; empty when there is no such extension.
    public var subjectAlternativeNames: [SubjectAlternativeName] {
        withHandle { certificate in
            // X509_get_ext_d2i returns a new GENERAL_NAMES that we must free.
            guard let raw = X509_get_ext_d2i(certificate, NID_subject_alt_name, nil, nil) else { return [] }
            let names = OpaquePointer(raw)
            defer { cshim_general_names_free(names) }
            return (0..<cshim_general_names_count(names)).compactMap { index in
                guard let name = cshim_general_names_value(names, index)?.pointee else { return nil }
                switch name.type {
                case GEN_DNS: return Self.ia5(name.d.dNSName).map { .dns($0) }
                case GEN_URI: return Self.ia5(name.d.uniformResourceIdentifier).map { .uri($0) }
                case GEN_EMAIL: return Self.ia5(name.d.rfc822Name).map { .email($0) }
                case GEN_IPADD: return Self.ipAddress(name.d.iPAddress).map { .ip($0) }
                default: return nil
                }
            }
        }
    }

    /// The start of the validity period (`distantPast` if OpenSSL cannot read it).
    public var notBefore: Date { withHandle { Self.date(X509_get0_notBefore($0)) } }

    /// The end of the validity period (`distantPast` if OpenSSL cannot read it).
    public var notAfter: Date { withHandle { Self.date(X509_get0_notAfter($0)) } }

    /// The SHA-256 digest of the DER encoding, as uppercase hex without separators.
    public var sha256Fingerprint: String {
        withHandle { certificate in
            var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            guard X509_digest(certificate, EVP_sha256(), &digest, &length) == 1 else { return "" }
            return digest.prefix(Int(length)).map { String(format: "%02X", $0) }.joined()
        }
    }

    /// The serial number in uppercase hex (as `openssl` index files write it).
    public var serialNumberHex: String {
        withHandle { certificate in
            guard let serial = X509_get0_serialNumber(certificate), let number = ASN1_INTEGER_to_BN(serial, nil) else {
                return ""
            }
            defer { BN_free(number) }
            guard let hex = BN_bn2hex(number) else { return "" }
            defer { CRYPTO_free(hex, #fileID, #line) }
            return String(cString: hex)
        }
    }

    /// The first OCSP responder URL of the Authority Information Access extension, if any.
    public var ocspResponderURL: String? {
        var buffer = [CChar](repeating: 0, count: 2048)
        let length = withHandle { cshim_x509_first_ocsp_url($0, &buffer, Int32(buffer.count)) }
        return length > 0 ? String(cBuffer: buffer) : nil
    }

    /// Whether the certificate has an extension with the dotted `oid`
    /// (for example "1.2.840.113635.100.6.11.1"); false for an OID that does not parse.
    public func hasExtension(oid: String) -> Bool {
        // OBJ_txt2obj with no_name = 1 accepts only dotted numbers and returns an object we free.
        guard let object = OBJ_txt2obj(oid, 1) else {
            ERR_clear_error()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return withHandle { X509_get_ext_by_OBJ($0, object, -1) >= 0 }
    }

    /// Lends the `X509*` for the duration of `body`. Do not free it or keep it; call
    /// `X509_up_ref` first if you must hold on to it.
    public func withUnsafeCertificate<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(handle) }
    }

    /// `withUnsafeCertificate` with typed throws, for this module's own use.
    func withHandle<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T {
        defer { withExtendedLifetime(self) {} }
        return try body(handle)
    }

    private static func utf8(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
        guard let string else { return nil }
        // ASN1_STRING_to_UTF8 allocates `out`, which we free.
        var out: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&out, string)
        guard length >= 0, let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
    }

    private static func bytes(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> [UInt8]? {
        guard let string, let data = ASN1_STRING_get0_data(string) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }

    private static func ia5(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
        bytes(string).map { String(decoding: $0, as: UTF8.self) }
    }

    private static func ipAddress(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
        guard let bytes = bytes(string), bytes.count == 4 || bytes.count == 16 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil else { return nil }
        return String(cBuffer: text)
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return .distantPast }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
