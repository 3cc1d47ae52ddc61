import Sockets
import Wire

extension SocketAddress {
    /// `resolve` with a failure reported as UNAVAILABLE, as every RPC failure to reach a peer is.
    static func resolveForRPC(host: String, port: Int) throws(RPCError) -> [SocketAddress] {
        do {
            return try resolve(host: host, port: port)
        } catch {
            throw RPCError(.unavailable, error.message)
        }
    }
}
