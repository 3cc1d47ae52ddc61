import CMicroHTTPD
import CShims
import Glibc

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
            dispatcher.deadlines.headersArrived(connection.socket)
            let contentLength = connection.header("Content-Length").flatMap { Int($0) }
            let start = dispatcher.start(
                method: String(cString: method), path: String(cString: url), contentLength: contentLength)
            switch start {
            case .respond(let response):
                dispatcher.deadlines.requestRead(connection.socket)
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
            // A body of no announced length (chunked) past the limit is dropped as it comes;
            // one that goes on past the slack as well is cut here: libmicrohttpd cannot answer
            // before the body ends, and a body need not end.
            return pending.isPastSlack ? .NO : .YES
        }
        // Final call: the whole body has arrived.
        dispatcher.deadlines.requestRead(connection.socket)
        let response = dispatcher.finish(pending) {
            HTTPRequest(
                method: String(cString: method), path: String(cString: url), query: connection.query(),
                headers: connection.headers(), body: pending.body, clientAddress: connection.clientAddress,
                clientCertificate: connection.clientCertificate)
        }
        return connection.queue(response, logger: dispatcher.logger)
    }

    /// Called when a request ends, answered or not; frees its `PendingRequest`, and the
    /// connection waits for its next request from now.
    static let requestCompleted: MHD_RequestCompletedCallback = { cls, rawConnection, requestState, _ in
        if let cls, let rawConnection {
            let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
            dispatcher.deadlines.requestEnded(MHDConnection(rawConnection).socket)
        }
        guard let requestState, let stored = requestState.pointee else { return }
        Unmanaged<PendingRequest>.fromOpaque(stored).release()
        requestState.pointee = nil
    }

    /// Called when a connection opens and when it closes (before its socket is closed).
    static let connectionChanged: MHD_NotifyConnectionCallback = { cls, rawConnection, _, code in
        guard let cls, let rawConnection else { return }
        let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
        let socket = MHDConnection(rawConnection).socket
        guard socket >= 0 else { return }
        if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED
            dispatcher.deadlines.opened(socket)
        } else {
            dispatcher.deadlines.closed(socket)
        }
    }
}
