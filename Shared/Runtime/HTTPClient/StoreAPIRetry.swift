public import Foundation

/// Why a call to a store's server API (the App Store Server API, the Google Play Developer API)
/// failed, the same codes for both; each client's error type carries one.
public struct StoreAPIErrorCode: Sendable, Hashable, CustomStringConvertible {
    private enum Known: String, Sendable {
        case notFound, wrongEnvironment, gone, unauthorized, rateLimited, server, network, invalidRequest,
            invalidResponse, configuration
    }
    private let known: Known
    private init(_ known: Known) { self.known = known }

    /// 404: the store does not know it (Play: after the brief retries a brand-new token gets).
    public static let notFound = StoreAPIErrorCode(.notFound)
    /// App Store: the transaction is not in the environment asked (`TransactionIdNotFoundError`),
    /// so the other one may know it.
    public static let wrongEnvironment = StoreAPIErrorCode(.wrongEnvironment)
    /// Play 410: the purchase is too old to be queried (Google keeps about 60 days after expiry).
    public static let gone = StoreAPIErrorCode(.gone)
    /// The credentials were refused: 401 (Play: after renewing the access token once), 403, or
    /// the token exchange refused.
    public static let unauthorized = StoreAPIErrorCode(.unauthorized)
    /// 429 after every retry.
    public static let rateLimited = StoreAPIErrorCode(.rateLimited)
    /// 5xx after every retry.
    public static let server = StoreAPIErrorCode(.server)
    /// No answer: connection refused, timeout, TLS failure, cancelled.
    public static let network = StoreAPIErrorCode(.network)
    /// Another 4xx: the store refused the request itself.
    public static let invalidRequest = StoreAPIErrorCode(.invalidRequest)
    /// An answer that is not what the API documents.
    public static let invalidResponse = StoreAPIErrorCode(.invalidResponse)
    /// The key, URLs or ids configured cannot be used.
    public static let configuration = StoreAPIErrorCode(.configuration)

    /// Whether trying again later may succeed.
    public var isRetryable: Bool { self == .rateLimited || self == .server || self == .network }

    public var description: String { known.rawValue }
}

/// How one attempt of a store API call ended, as `RetryPolicy.run` reads it.
public enum StoreAPIAttempt<Failure: Error>: Sendable where Failure: Sendable {
    /// A 2xx answer with this body.
    case success(Data)
    /// A failure that is final.
    case failure(Failure)
    /// A failure that may pass on a later attempt: retried under the policy, after `retryAfter`
    /// when the server said so.
    case retry(Failure, retryAfter: Duration?)
    /// Asked again after `delay` (at once for nil), outside the policy's count: a client's own
    /// rule (a renewed access token, a purchase the store does not know yet).
    case again(after: Duration?)

    /// The attempt a transport failure makes: no answer may pass later; a cancelled call or an
    /// answer past the size limit will not. `error` makes the client's error from a code and a
    /// message headed by `context`.
    public static func transportFailure(
        _ failure: HTTPClientTransport.Failure, context: String, _ error: (StoreAPIErrorCode, String) -> Failure
    ) -> StoreAPIAttempt {
        switch failure {
        case .network(let cause): .retry(error(.network, "\(context): \(cause)"), retryAfter: nil)
        case .cancelled: .failure(error(.network, "\(context): cancelled"))
        case .tooLarge(let limit):
            .failure(error(.invalidResponse, "\(context): the answer is longer than \(limit) bytes"))
        }
    }
}

extension RetryPolicy {
    /// Makes attempts (`attempt`, given its number under the policy from 1) until one succeeds or
    /// fails for good, retrying what may pass later while the policy allows, with its backoff and
    /// jitter, and returns the body of the 2xx answer. `sleep` waits between attempts; when it
    /// throws (the call is cancelled), the call fails with `interrupted`.
    public func run<Failure: Error>(
        sleep: @Sendable (Duration) async throws -> Void, interrupted: @autoclosure () -> Failure,
        _ attempt: (Int) async -> StoreAPIAttempt<Failure>
    ) async throws(Failure) -> Data {
        var number = 1
        while true {
            let delay: Duration?
            switch await attempt(number) {
            case .success(let body): return body
            case .failure(let error): throw error
            case .again(let after): delay = after
            case .retry(let error, let retryAfter):
                guard allowsRetry(after: number) else { throw error }
                delay = self.delay(afterAttempt: number, retryAfter: retryAfter, jitter: .random(in: 0...1))
                number += 1
            }
            guard let delay else { continue }
            do { try await sleep(delay) } catch { throw interrupted() }
        }
    }
}
