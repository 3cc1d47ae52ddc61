import Config
import RPC
import Wire

/// `RPCTransport` over the RPC module's client: one connection to `CallOptions.address`, with
/// mutual TLS when `CallOptions.tls` is set. Call `shutdown()` when done.
public struct RPCClientTransport: RPCTransport {
    private let client: RPCClient

    /// Prepares the client; it connects on the first call. Throws when the TLS files cannot be loaded.
    public init(_ options: CallOptions) throws(SubctlError) {
        let tls = options.tls.map {
            TLSConfiguration(certificatePath: $0.certificatePath, keyPath: $0.keyPath, caPath: $0.caPath)
        }
        do {
            client = try RPCClient(endpoints: [options.address], tls: tls)
        } catch {
            throw SubctlError(error)
        }
    }

    public func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        do {
            return try await client.unary(method, request: request, timeout: timeout)
        } catch {
            throw SubctlError(error)
        }
    }

    public func serverStream(
        _ method: String, request: [UInt8], timeout: Duration?, onMessage: ([UInt8]) throws(SubctlError) -> Bool
    ) async throws(SubctlError) {
        var messages = client.serverStream(method, request: request, timeout: timeout).makeAsyncIterator()
        while true {
            let message: [UInt8]?
            do {
                message = try await messages.next()
            } catch {
                throw SubctlError(error)
            }
            guard let message, try onMessage(message) else { return }
        }
    }

    /// Closes the connection.
    public func shutdown() { client.shutdown() }
}
