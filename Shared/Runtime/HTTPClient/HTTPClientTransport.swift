public import Foundation
import Observability
import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Single HTTP exchanges over one URLSession, for the clients of the stores' server APIs: the
/// body is read up to a limit and the exchange is cut off beyond it, redirects are never
/// followed (the 3xx answer comes back as it is, so a bearer token never travels to another
/// URL), nothing is cached or stored in cookies, and a cancelled Swift task cancels its request.
/// Each request carries a `traceparent` header: its own when it has one, else
/// `TraceContext.outgoing()` (the trace of the call being served, or a new one).
public final class HTTPClientTransport: Sendable {
    /// An answer from the server.
    public struct Response: Sendable {
        /// The HTTP status code.
        public let status: Int
        /// The response headers with lowercased names.
        public let headers: [String: String]
        /// The whole body, at most the transport's limit.
        public let body: Data
    }

    /// Why there is no answer to give.
    public enum Failure: Error, Sendable, Equatable {
        /// No answer: the connection failed, timed out, or broke off. The text names the cause.
        case network(String)
        /// The body (or its announced `Content-Length`) exceeds the limit; the rest was not read.
        case tooLarge(limit: Int)
        /// The calling task was cancelled.
        case cancelled

        /// The cause `network` names when the exchange ran out of time.
        public static let timedOutCause = "timed out"

        /// Whether the exchange ran out of time.
        public var isTimeout: Bool { self == .network(Self.timedOutCause) }
    }

    private let session: URLSession
    private let delegate: ExchangeDelegate

    /// A transport whose requests give up after `requestTimeout` seconds in all and whose
    /// answers may carry at most `maxResponseBytes` of body.
    public init(requestTimeout: TimeInterval, maxResponseBytes: Int) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = requestTimeout
        configuration.timeoutIntervalForResource = requestTimeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        delegate = ExchangeDelegate(maxResponseBytes: maxResponseBytes)
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends `request` and waits for the whole answer, or for the reason there is none.
    public func perform(_ request: URLRequest) async -> Result<Response, Failure> {
        if Task.isCancelled { return .failure(.cancelled) }
        var request = request
        if request.value(forHTTPHeaderField: TraceContext.headerName) == nil {
            request.setValue(TraceContext.outgoing().traceparent, forHTTPHeaderField: TraceContext.headerName)
        }
        let task = session.dataTask(with: request)
        let delegate = delegate
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Registered before `resume`, so the delegate always finds the exchange.
                delegate.begin(task.taskIdentifier, continuation)
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
        // A cancelled request can end with another error than "cancelled" (the connection it was
        // using torn down first): a failure of a cancelled caller is its cancellation.
        if case .failure = outcome, Task.isCancelled { return .failure(.cancelled) }
        return outcome
    }
}

/// The URLSession delegate behind `HTTPClientTransport`: collects each task's body up to the
/// limit and resumes the waiting caller when the task completes.
private final class ExchangeDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Exchange {
        let continuation: CheckedContinuation<Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>, Never>
        var body = Data()
        var tooLarge = false
    }

    private let maxResponseBytes: Int
    private let exchanges = Mutex<[Int: Exchange]>([:])

    init(maxResponseBytes: Int) {
        self.maxResponseBytes = maxResponseBytes
    }

    /// Starts keeping the body of task `id` for `continuation`.
    func begin(
        _ id: Int,
        _ continuation: CheckedContinuation<
            Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>, Never
        >
    ) {
        exchanges.withLock { $0[id] = Exchange(continuation: continuation) }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard response.expectedContentLength > Int64(maxResponseBytes) else { return completionHandler(.allow) }
        exchanges.withLock { $0[dataTask.taskIdentifier]?.tooLarge = true }
        completionHandler(.cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        // The exchange is changed where it is kept: a copy taken out and put back would hold a
        // second reference to the body, and each append would copy all of it.
        let overLimit = exchanges.withLock { exchanges -> Bool in
            guard exchanges[id]?.tooLarge == false else { return false }
            if exchanges[id]!.body.count + data.count > maxResponseBytes {
                exchanges[id]!.tooLarge = true
                exchanges[id]!.body = Data()
                return true
            }
            exchanges[id]!.body.append(data)
            return false
        }
        if overLimit { dataTask.cancel() }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        exchange.continuation.resume(
            returning: Self.outcome(exchange, task: task, error: error, limit: maxResponseBytes))
    }

    private static func outcome(_ exchange: Exchange, task: URLSessionTask, error: (any Error)?, limit: Int)
        -> Result<HTTPClientTransport.Response, HTTPClientTransport.Failure>
    {
        if exchange.tooLarge { return .failure(.tooLarge(limit: limit)) }
        if let error {
            let code = (error as? URLError)?.code
            return .failure(code == .cancelled ? .cancelled : .network(describe(error)))
        }
        guard let response = task.response as? HTTPURLResponse else {
            return .failure(.network("the answer is not HTTP"))
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            headers[name.lowercased()] = value
        }
        return .success(.init(status: response.statusCode, headers: headers, body: exchange.body))
    }

    /// A short cause for a failed exchange, without the URL.
    private static func describe(_ error: any Error) -> String {
        guard let code = (error as? URLError)?.code else { return "the request failed" }
        switch code {
        case .cannotConnectToHost: return "connection refused"
        case .timedOut: return HTTPClientTransport.Failure.timedOutCause
        case .cannotFindHost, .dnsLookupFailed: return "host not found"
        case .networkConnectionLost: return "connection lost"
        case .notConnectedToInternet: return "no network"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
            .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
            return "TLS failure"
        case .badServerResponse: return "malformed HTTP answer"
        default: return "URL error \(code.rawValue)"
        }
    }
}
