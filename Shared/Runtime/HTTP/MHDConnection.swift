import CMicroHTTPD
import CShims
import Observability

/// A connection libmicrohttpd lends to a callback: valid only during that call and never stored.
struct MHDConnection {
    private let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// The connection's socket (-1 if libmicrohttpd does not say).
    var socket: Int32 { cshim_mhd_connection_fd(pointer) }

    /// The certificate the client presented on HTTPS.
    var clientCertificate: HTTPRequest.ClientCertificate {
        var der: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        switch cshim_mhd_peer_certificate(pointer, &der, &length) {
        case 1: return .verified([UInt8](UnsafeBufferPointer(start: der, count: Int(length))))
        case -1: return .refused
        default: return .none
        }
    }

    /// The client's IP address as text, `""` when unknown.
    var clientAddress: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let count = cshim_mhd_client_address(pointer, buffer.baseAddress!, 64)
            return count > 0 ? String(cString: buffer.baseAddress!) : ""
        }
    }

    /// The value of the request header `name` (case-insensitive), if present.
    func header(_ name: String) -> String? {
        // The returned string belongs to the connection; copy it before the callback returns.
        MHD_lookup_connection_value(pointer, .HEADER_KIND, name).map { String(cString: $0) }
    }

    /// The request headers with lowercased names; repeated headers are joined with `", "`.
    func headers() -> [String: String] {
        Dictionary(values(.HEADER_KIND).map { ($0.lowercased(), $1) }, uniquingKeysWith: { "\($0), \($1)" })
    }

    /// The percent-decoded query parameters; a repeated name keeps its last value.
    func query() -> [String: String] {
        Dictionary(values(.GET_ARGUMENT_KIND), uniquingKeysWith: { _, last in last })
    }

    /// Sends `response` once the request is complete (or right away on the first call or
    /// during the body, which makes libmicrohttpd skip the rest and close the connection afterwards).
    func queue(_ response: HTTPResponse, logger: Logger) -> MHD_Result {
        var response = response
        if !(100...999).contains(response.status) {
            logger.error("handler returned an invalid status; sending 500", ["status": String(response.status)])
            response = .text("internal error\n", status: 500)
        }
        guard let mhdResponse = MHDResponse(response, logger: logger) else {
            logger.error("cannot create response", ["status": String(response.status)])
            return .NO
        }
        return mhdResponse.withUnsafeHandle { MHD_queue_response(pointer, UInt32(response.status), $0) }
    }

    /// The name-value pairs of one kind, in the order the client sent them.
    private func values(_ kind: MHD_ValueKind) -> [(String, String)] {
        var pairs: [(String, String)] = []
        withUnsafeMutablePointer(to: &pairs) { pairs in
            _ = MHD_get_connection_values(pointer, kind, Self.collect, pairs)
        }
        return pairs
    }

    /// Appends each pair to the `[(String, String)]` that `cls` points to; a missing value becomes `""`.
    private static let collect: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls, let key else { return .YES }
        let pairs = cls.assumingMemoryBound(to: [(String, String)].self)
        pairs.pointee.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
        return .YES
    }
}
