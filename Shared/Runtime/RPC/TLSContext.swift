import COpenSSL
import CShims
import Foundation
import Glibc
import Wire

/// An OpenSSL SSL_CTX set up for mutual TLS 1.3 from a `TLSConfiguration`.
final class TLSContext: @unchecked Sendable {  // SSL_CTX is immutable after setup and safe to share
    enum Role { case server, client }

    let role: Role
    let configuration: TLSConfiguration
    private let context: OpaquePointer

    init(_ configuration: TLSConfiguration, role: Role) throws(RPCError) {
        self.role = role
        self.configuration = configuration
        guard let context = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
            throw RPCError(.internal, "SSL_CTX_new: \(TLSContext.drainErrors())")
        }
        self.context = context
        guard cshim_ssl_ctx_set_min_tls13(context) == 1 else {
            throw RPCError(.internal, "cannot require TLS 1.3: \(TLSContext.drainErrors())")
        }
        _ = cshim_ssl_ctx_set_mode(
            context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        if let certificatePath = configuration.certificatePath, let keyPath = configuration.keyPath {
            guard SSL_CTX_use_certificate_chain_file(context, certificatePath) == 1 else {
                throw RPCError(
                    .internal, "cannot load TLS certificate \(certificatePath): \(TLSContext.drainErrors())")
            }
            guard SSL_CTX_use_PrivateKey_file(context, keyPath, SSL_FILETYPE_PEM) == 1 else {
                // The key's contents never reach the message.
                throw RPCError(.internal, "cannot load TLS key \(keyPath): \(TLSContext.drainErrors())")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw RPCError(.internal, "TLS key \(keyPath) does not match the certificate")
            }
        } else if role == .server {
            throw RPCError(.internal, "a TLS server needs a certificate and a key")
        }
        guard SSL_CTX_load_verify_locations(context, configuration.caPath, nil) == 1 else {
            throw RPCError(.internal, "cannot load TLS CA \(configuration.caPath): \(TLSContext.drainErrors())")
        }
        let mode = role == .server ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER
        SSL_CTX_set_verify(context, mode, nil)
    }

    deinit { SSL_CTX_free(context) }

    /// A new session for one connection on `fd`. For clients, `host` is checked against the
    /// server certificate's names (DNS name or IP address).
    func makeSession(fd: Int32, host: String?) throws(RPCError) -> TLSSession {
        guard let ssl = SSL_new(context) else { throw RPCError(.internal, "SSL_new: \(TLSContext.drainErrors())") }
        SSL_set_fd(ssl, fd)
        if role == .server {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let name = configuration.serverName ?? host {
                let param = SSL_get0_param(ssl)
                if X509_VERIFY_PARAM_set1_ip_asc(param, name) != 1 {
                    ERR_clear_error()
                    X509_VERIFY_PARAM_set1_host(param, name, 0)
                    _ = cshim_ssl_set_tlsext_host_name(ssl, name)
                }
            }
        }
        return TLSSession(ssl)
    }

    /// Every queued OpenSSL error as one line, oldest first; clears the queue.
    static func drainErrors() -> String {
        var parts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            parts.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return parts.isEmpty ? "unknown OpenSSL error" : parts.joined(separator: "; ")
    }
}

/// One connection's SSL object. Every I/O call starts with an empty OpenSSL error queue (it is
/// per thread, and shared by every connection of a loop), so one connection's failure can
/// never be read as another's.
final class TLSSession {
    private let ssl: OpaquePointer
    /// Set once the session failed; close_notify is then not attempted.
    private(set) var failed = false

    init(_ ssl: OpaquePointer) { self.ssl = ssl }

    deinit { SSL_free(ssl) }

    enum Progress {
        case done(Int)
        case wantRead
        case wantWrite
        case closed
        case failed(String)
    }

    func handshake() -> Progress {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        return rc == 1 ? .done(0) : progress(rc)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Progress {
        ERR_clear_error()
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        return rc > 0 ? .done(Int(rc)) : progress(rc)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Progress {
        ERR_clear_error()
        let rc = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        return rc > 0 ? .done(Int(rc)) : progress(rc)
    }

    /// Decrypted bytes OpenSSL holds that epoll cannot see.
    var hasBufferedBytes: Bool { SSL_pending(ssl) > 0 }

    /// Sends close_notify, best effort on a non-blocking socket; skipped after a failure,
    /// when the peer is gone or the session is unusable.
    func shutdown() {
        guard !failed else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The peer certificate's identities: SAN DNS names and URIs, then the subject CN.
    func peerIdentities() -> [String] {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return [] }
        // SSL_get1 returns a new reference; the wrapper frees it.
        return PeerIdentity.names(of: certificate)
    }

    /// Why verification of the peer failed, when it did.
    var verifyError: String? {
        let result = SSL_get_verify_result(ssl)
        guard result != X509_V_OK else { return nil }
        return String(cString: X509_verify_cert_error_string(result))
    }

    private func progress(_ rc: Int32) -> Progress {
        let error = SSL_get_error(ssl, rc)
        switch error {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            failed = true
            let text =
                ERR_peek_error() != 0
                ? TLSContext.drainErrors() : (errno == 0 ? "connection closed" : Socket.errorText())
            return .failed(text)
        default:
            failed = true
            var text = TLSContext.drainErrors()
            if let verify = verifyError { text += " (\(verify))" }
            return .failed(text)
        }
    }
}
