import COpenSSL
import CShims
import Foundation

/// Builds and signs version 3 certificates from a `CertificateRequest`.
///
/// CA certificates get basicConstraints CA:TRUE and keyUsage keyCertSign, cRLSign; others get
/// CA:FALSE and keyUsage digitalSignature (plus keyEncipherment for RSA subject keys). Both
/// extensions are critical. Every certificate gets subjectKeyIdentifier and
/// authorityKeyIdentifier. Issuers with a P-384 key sign with SHA-384, all others with SHA-256.
public enum CertificateIssuer {
    /// A certificate for `key` signed by itself: a root CA when `request.isCertificateAuthority`.
    /// Throws `CryptoError` when a field is invalid (such as a malformed IP address or OID) or
    /// OpenSSL fails.
    public static func selfSigned(
        _ request: CertificateRequest, key: PrivateKey
    ) throws(CryptoError) -> X509Certificate {
        try build(request, subjectKey: key, issuer: nil, issuerKey: key)
    }

    /// A certificate for `subjectKey` signed by `issuer`, whose private key is `issuerKey`.
    /// Throws `CryptoError` when `issuerKey` does not belong to `issuer`, a field is invalid,
    /// or OpenSSL fails.
    public static func issue(
        _ request: CertificateRequest, subjectKey: PrivateKey, issuer: X509Certificate, issuerKey: PrivateKey
    ) throws(CryptoError) -> X509Certificate {
        ERR_clear_error()
        let matches = issuer.withHandle { certificate in
            issuerKey.withHandle { X509_check_private_key(certificate, $0) == 1 }
        }
        guard matches else { throw .openSSL("issuerKey does not match the issuer certificate") }
        return try build(request, subjectKey: subjectKey, issuer: issuer, issuerKey: issuerKey)
    }

    private static func build(
        _ request: CertificateRequest, subjectKey: PrivateKey, issuer: X509Certificate?, issuerKey: PrivateKey
    ) throws(CryptoError) -> X509Certificate {
        ERR_clear_error()
        guard let pointer = X509_new() else { throw .openSSL("X509_new failed") }
        // The wrapper owns the X509 from here on (and frees it if we throw); nobody else sees it
        // until it is signed and returned.
        let certificate = X509Certificate(takingOwnership: pointer)
        let digest = issuerKey.kind == .p384 ? EVP_sha384() : EVP_sha256()
        try certificate.withHandle { (x509) throws(CryptoError) in
            try subjectKey.withHandle { (publicKey) throws(CryptoError) in
                try fillFields(x509, request, publicKey: publicKey, issuer: issuer)
            }
            try (issuer ?? certificate).withHandle { (issuerX509) throws(CryptoError) in
                try addExtensions(x509, request, issuer: issuerX509, selfSigned: issuer == nil, rsa: subjectKey.isRSA)
            }
            try issuerKey.withHandle { (signingKey) throws(CryptoError) in
                guard X509_sign(x509, signingKey, digest) > 0 else { throw .openSSL("X509_sign failed") }
            }
        }
        return certificate
    }

    /// Version, serial, subject, issuer name, validity and public key.
    private static func fillFields(
        _ x509: OpaquePointer, _ request: CertificateRequest, publicKey: OpaquePointer, issuer: X509Certificate?
    ) throws(CryptoError) {
        guard X509_set_version(x509, Int(X509_VERSION_3)) == 1 else { throw .openSSL("X509_set_version failed") }
        let serial = request.serialNumber ?? UInt64.random(in: 1...UInt64(Int64.max))
        guard ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serial) == 1 else {
            throw .openSSL("setting the serial number failed")
        }
        guard let subject = X509_NAME_new() else { throw .openSSL("X509_NAME_new failed") }
        defer { X509_NAME_free(subject) }
        let commonName = Array(request.commonName.utf8)
        guard
            X509_NAME_add_entry_by_NID(
                subject, NID_commonName, MBSTRING_UTF8, commonName, Int32(commonName.count), -1, 0) == 1
        else { throw .openSSL("invalid commonName \"\(request.commonName)\"") }
        // The set functions copy the name, so `subject` stays ours to free.
        guard X509_set_subject_name(x509, subject) == 1 else { throw .openSSL("X509_set_subject_name failed") }
        let issuerName = issuer?.withHandle { X509_set_issuer_name(x509, X509_get_subject_name($0)) }
        guard (issuerName ?? X509_set_issuer_name(x509, subject)) == 1 else {
            throw .openSSL("X509_set_issuer_name failed")
        }
        guard ASN1_TIME_set(X509_getm_notBefore(x509), seconds(request.notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), seconds(request.notAfter)) != nil
        else { throw .openSSL("setting the validity period failed") }
        guard X509_set_pubkey(x509, publicKey) == 1 else { throw .openSSL("X509_set_pubkey failed") }
    }

    private static func addExtensions(
        _ x509: OpaquePointer, _ request: CertificateRequest, issuer: OpaquePointer, selfSigned: Bool, rsa: Bool
    ) throws(CryptoError) {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer, x509, nil, nil, 0)
        func add(_ nid: Int32, _ value: String) throws(CryptoError) {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw .openSSL("building extension \(String(cString: OBJ_nid2sn(nid))) = \(value) failed")
            }
            defer { X509_EXTENSION_free(ext) }  // X509_add_ext stores a copy.
            guard X509_add_ext(x509, ext, -1) == 1 else { throw .openSSL("X509_add_ext failed") }
        }
        if request.isCertificateAuthority {
            try add(NID_basic_constraints, "critical,CA:TRUE")
            try add(NID_key_usage, "critical,keyCertSign,cRLSign")
        } else {
            try add(NID_basic_constraints, "critical,CA:FALSE")
            try add(NID_key_usage, rsa ? "critical,digitalSignature,keyEncipherment" : "critical,digitalSignature")
        }
        if !request.extendedKeyUsage.isEmpty {
            try add(NID_ext_key_usage, request.extendedKeyUsage.map(\.rawValue).joined(separator: ","))
        }
        try add(NID_subject_key_identifier, "hash")
        // A self-signed certificate names its own (just added) key identifier; otherwise use the
        // issuer's, or its name and serial if it has no key identifier.
        try add(NID_authority_key_identifier, selfSigned ? "keyid:always" : "keyid,issuer")
        if let url = request.ocspResponderURL {
            guard url.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "," }) else {
                throw CryptoError(message: "the OCSP responder URL \"\(url)\" is not a plain ASCII URL")
            }
            try add(NID_info_access, "OCSP;URI:\(url)")
        }
        try addSubjectAlternativeNames(x509, request)
        for oid in request.customExtensionOIDs {
            try addNullExtension(x509, oid: oid)
        }
    }

    private static func addSubjectAlternativeNames(_ x509: OpaquePointer, _ request: CertificateRequest)
        throws(CryptoError)
    {
        guard !(request.dnsNames.isEmpty && request.ipAddresses.isEmpty && request.uris.isEmpty) else { return }
        guard let names = GENERAL_NAMES_new() else { throw .openSSL("GENERAL_NAMES_new failed") }
        defer { cshim_general_names_free(names) }  // Frees the entries too.
        for name in request.dnsNames {
            try append(to: names, GEN_DNS, ia5String(name, what: "DNS name"))
        }
        for address in request.ipAddresses {
            guard let octets = a2i_IPADDRESS(address) else { throw .openSSL("invalid IP address \"\(address)\"") }
            try append(to: names, GEN_IPADD, octets)
        }
        for uri in request.uris {
            try append(to: names, GEN_URI, ia5String(uri, what: "URI"))
        }
        guard
            X509_add1_ext_i2d(x509, NID_subject_alt_name, UnsafeMutableRawPointer(names), 0, UInt(X509V3_ADD_DEFAULT))
                == 1
        else { throw .openSSL("adding subjectAltName failed") }
    }

    /// Appends a general name of `type` holding `value`; `names` takes ownership of `value`.
    private static func append(
        to names: OpaquePointer, _ type: Int32, _ value: UnsafeMutablePointer<ASN1_STRING>
    ) throws(CryptoError) {
        guard let name = GENERAL_NAME_new() else {
            ASN1_STRING_free(value)
            throw .openSSL("GENERAL_NAME_new failed")
        }
        GENERAL_NAME_set0_value(name, type, UnsafeMutableRawPointer(value))  // `name` now owns `value`.
        guard cshim_general_names_push(names, name) > 0 else {
            GENERAL_NAME_free(name)
            throw .openSSL("adding a subjectAltName entry failed")
        }
    }

    /// A new IA5String (which the caller owns) holding `text`, which must be non-empty ASCII.
    private static func ia5String(_ text: String, what: String) throws(CryptoError) -> UnsafeMutablePointer<ASN1_STRING>
    {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 < 0x80 }) else {
            throw CryptoError(message: "\(what) \"\(text)\" must be non-empty ASCII")
        }
        guard let string = ASN1_IA5STRING_new() else { throw .openSSL("ASN1_IA5STRING_new failed") }
        guard ASN1_STRING_set(string, bytes, Int32(bytes.count)) == 1 else {
            ASN1_STRING_free(string)
            throw .openSSL("ASN1_STRING_set failed")
        }
        return string
    }

    /// Adds a non-critical extension `oid` whose value is the DER of ASN.1 NULL (05 00).
    private static func addNullExtension(_ x509: OpaquePointer, oid: String) throws(CryptoError) {
        // no_name = 1: only dotted numbers are accepted. We own `object`, `value` and `ext`.
        guard let object = OBJ_txt2obj(oid, 1) else { throw .openSSL("invalid OID \"\(oid)\"") }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else { throw .openSSL("ASN1_OCTET_STRING_new failed") }
        defer { ASN1_OCTET_STRING_free(value) }
        let null: [UInt8] = [0x05, 0x00]
        guard ASN1_OCTET_STRING_set(value, null, Int32(null.count)) == 1,
            let ext = X509_EXTENSION_create_by_OBJ(nil, object, 0, value)
        else { throw .openSSL("building extension \(oid) failed") }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x509, ext, -1) == 1 else { throw .openSSL("adding extension \(oid) failed") }
    }

    /// Whole seconds since 1970, rounded down (dates before 1970 work too).
    private static func seconds(_ date: Date) -> time_t {
        time_t(date.timeIntervalSince1970.rounded(.down))
    }
}
