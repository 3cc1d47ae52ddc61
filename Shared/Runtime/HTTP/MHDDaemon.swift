import CMicroHTTPD
import CShims
import Glibc
import Sockets
import Synchronization

/// A running libmicrohttpd daemon with internal polling threads. Owns the `MHD_Daemon`; `stop()`
/// (or deinit) stops it and waits for its threads to end. It keeps the dispatcher alive, since the
/// threads call into it through an unretained pointer.
final class MHDDaemon: Sendable {
    /// The port the daemon listens on.
    let port: Int
    private let handle: Mutex<OpaquePointer?>
    private let dispatcher: RequestDispatcher
    /// The TLS key, certificate and CA as C strings, kept for the daemon's life (never
    /// written after init; freed in deinit).
    private nonisolated(unsafe) let tlsText: [UnsafeMutablePointer<CChar>]

    /// Starts listening on `address` with the connection and thread limits of `limits`.
    init(address: SocketAddress, dispatcher: RequestDispatcher, limits: HTTPLimits, tls: HTTPServerTLS?)
        throws(HTTPServerError)
    {
        // MHD_USE_ERROR_LOG is left off: failures are reported through errno and our own logger.
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_AUTO.rawValue
        if address.isIPv6 { flags |= MHD_USE_DUAL_STACK.rawValue }
        var boundPort: UInt16 = 0
        var startErrno: Int32 = 0
        let cls = Unmanaged.passUnretained(dispatcher).toOpaque()
        var options = cshim_mhd_options(
            completed: MHDCallbacks.requestCompleted, completed_cls: cls,
            connection_notify: MHDCallbacks.connectionChanged, connection_cls: cls,
            connection_limit: UInt32(limits.maxConnections), per_address_limit: UInt32(limits.maxConnectionsPerAddress),
            idle_timeout_s: UInt32(limits.idleTimeoutSeconds), pool_size: UInt32(limits.threads),
            memory_limit: 64 * 1024, tls_key: nil, tls_certificate: nil, tls_trust: nil)
        let text = tls.map { [strdup($0.keyPEM)!, strdup($0.certificatePEM)!, strdup($0.trustPEM)!] } ?? []
        if text.count == 3 {
            (options.tls_key, options.tls_certificate, options.tls_trust) = (
                UnsafePointer(text[0]), UnsafePointer(text[1]), UnsafePointer(text[2])
            )
        }
        let started = address.withSockAddr { sockaddr, _ in
            // libmicrohttpd reads the address and the options only while starting.
            cshim_mhd_start(
                UInt32(flags), sockaddr, MHDCallbacks.accessHandler, cls, &options, &boundPort, &startErrno)
        }
        guard let started else {
            for pointer in text { free(pointer) }
            let why =
                tls == nil ? Self.reason(startErrno) : "\(Self.reason(startErrno)) (or its TLS files are unusable)"
            throw HTTPServerError(.cannotListen, "cannot listen on \(address): \(why)")
        }
        tlsText = text
        handle = Mutex(started)
        port = Int(boundPort)
        self.dispatcher = dispatcher
    }

    deinit {
        stop()
        for pointer in tlsText { free(pointer) }
    }

    /// Stops accepting, closes the connections and waits for the daemon's threads; idempotent.
    /// Must not be called from a handler, which runs on one of those threads.
    func stop() {
        if let daemon = handle.withLock({ $0.take() }) { MHD_stop_daemon(daemon) }
    }

    private static func reason(_ code: Int32) -> String {
        switch code {
        case 0: "libmicrohttpd refused to start"
        case EADDRINUSE: "address in use"
        default: String(cString: strerror(code)).lowercased()
        }
    }
}
