import CMicroHTTPD
import CShims
import Observability

/// A libmicrohttpd response built from an `HTTPResponse`. Owns the `MHD_Response` and destroys it
/// in deinit; a queued response is kept alive by libmicrohttpd's own reference until it is sent.
final class MHDResponse {
    private let handle: OpaquePointer

    /// Copies `response` into a new libmicrohttpd response; nil when libmicrohttpd cannot allocate one.
    init?(_ response: HTTPResponse, logger: Logger) {
        // MUST_COPY: libmicrohttpd copies the body, so the array only has to live for this call.
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return nil }
        handle = created
        for (name, value) in response.headers where MHD_add_response_header(handle, name, value) != .YES {
            logger.warning("dropped a response header libmicrohttpd refused", ["header": name])
        }
    }

    deinit { MHD_destroy_response(handle) }

    /// Lends the handle to `body`, which must not keep it.
    func withUnsafeHandle<T>(_ body: (OpaquePointer) -> T) -> T { body(handle) }
}
