import CMicroHTTPD
import CShims

/// The C callbacks libmicrohttpd calls on its own threads. They live in this nonisolated enum
/// (not in a main-actor context) so calling them off the main thread is safe. `cls` is the
/// server's `RequestDispatcher`, unretained: the `MHDDaemon` keeps it alive until its threads end.
enum MHDCallbacks {
    /// Called once when a request's headers arrive, once per piece of body, and once more when
    /// the body is complete. A `PendingRequest` carries the state between calls in `con_cls`.
    static let accessHandler: MHD_AccessHandlerCallback = {
        cls, rawConnection, url, method, _, uploadData, uploadDataSize, requestState in
        guard let cls, let rawConnection, let url, let method, let uploadDataSize, let requestState else {
            return .NO
        }
        let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
        let connection = MHDConnection(rawConnection)
        guard let stored = requestState.pointee else {
            // First call: the headers are in, the body is not.
            let contentLength = connection.header("Content-Length").flatMap { Int($0) }
            let start = dispatcher.start(
                method: String(cString: method), path: String(cString: url), contentLength: contentLength)
            switch start {
            case .respond(let response):
                return connection.queue(response, logger: dispatcher.logger)
            case .readBody(let pending):
                // Retained until requestCompleted releases it.
                requestState.pointee = Unmanaged.passRetained(pending).toOpaque()
                return .YES
            }
        }
        let pending = Unmanaged<PendingRequest>.fromOpaque(stored).takeUnretainedValue()
        if uploadDataSize.pointee > 0 {
            pending.append(UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee))
            uploadDataSize.pointee = 0  // All consumed.
            return .YES
        }
        // Final call: the whole body has arrived.
        let response = dispatcher.finish(pending) {
            HTTPRequest(
                method: String(cString: method), path: String(cString: url), query: connection.query(),
                headers: connection.headers(), body: pending.body)
        }
        return connection.queue(response, logger: dispatcher.logger)
    }

    /// Called when a request ends, answered or not; frees its `PendingRequest`.
    static let requestCompleted: MHD_RequestCompletedCallback = { _, _, requestState, _ in
        guard let requestState, let stored = requestState.pointee else { return }
        Unmanaged<PendingRequest>.fromOpaque(stored).release()
        requestState.pointee = nil
    }
}
