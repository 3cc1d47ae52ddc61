import Crypto
import Foundation
import HTTPClient

/// The signing key set a `PubSubPushAuthenticator` verifies with, and when to fetch it again.
///
/// - The first lookup fetches the set.
/// - A lookup after `lifetime` has passed since the last successful fetch fetches it again; if
///   that fails, the set held so far is still used.
/// - A `kid` the set lacks triggers a fetch, in case Google rotated its keys.
/// - Fetches triggered by lookups start at most once per `minimumInterval` (failed ones
///   included), so tokens with made-up `kid`s cannot make the service hammer the key endpoint.
///   Concurrent lookups share one fetch in flight.
///
/// A `kid` that is still missing is `unknownKey` when the last fetch succeeded and `retryable`
/// when it failed (the key may exist; the set could not be read).
actor RefreshingKeySet {
    /// Fetches and reads the set; throws `retryable` errors.
    typealias Load = @Sendable () async throws(PubSubPushAuthenticationError) -> JSONWebKeySet

    private let load: Load
    private let minimumInterval: TimeInterval
    private let lifetime: TimeInterval
    private var current: JSONWebKeySet?
    private var loadedAt: Date?
    private var lastAttempt: Date?
    private var lastFailure: PubSubPushAuthenticationError?
    private var inFlight: Task<PubSubPushAuthenticationError?, Never>?

    /// Fetches started so far (for metrics and tests).
    private(set) var fetches = 0

    init(minimumInterval: Duration, lifetime: Duration, load: @escaping Load) {
        self.minimumInterval = minimumInterval.timeInterval
        self.lifetime = lifetime.timeInterval
        self.load = load
    }

    /// The key named `keyID` at `now`, fetching the set first when the rules above say so.
    func key(withID keyID: String, now: Date) async throws(PubSubPushAuthenticationError) -> JSONWebKeySet.Key {
        let fresh = loadedAt.map { now.timeIntervalSince($0) < lifetime } ?? false
        if fresh, let key = current?.key(withID: keyID) { return key }
        if inFlight != nil || mayFetch(now: now) { _ = await refresh(now: now) }
        if let key = current?.key(withID: keyID) { return key }
        if let lastFailure {
            throw PubSubPushAuthenticationError(
                .retryable,
                "no signing key with kid \(PubSubPushAuthenticator.quoted(keyID)) is known and the key set "
                    + "could not be fetched: \(lastFailure.message)")
        }
        throw PubSubPushAuthenticationError(
            .unknownKey, "no signing key has kid \(PubSubPushAuthenticator.quoted(keyID)), even after a refresh")
    }

    /// Fetches the set now, or waits for the fetch already in flight; returns its failure, nil
    /// when it succeeded.
    func refresh(now: Date) async -> PubSubPushAuthenticationError? {
        if let inFlight { return await inFlight.value }
        lastAttempt = now
        fetches += 1
        let load = load
        let task = Task { () -> PubSubPushAuthenticationError? in
            do throws(PubSubPushAuthenticationError) {
                let set = try await load()
                self.adopt(set, at: now)
                return nil
            } catch {
                self.fail(error)
                return error
            }
        }
        inFlight = task
        let failure = await task.value
        inFlight = nil
        return failure
    }

    private func adopt(_ set: JSONWebKeySet, at now: Date) {
        current = set
        loadedAt = now
        lastFailure = nil
    }

    private func fail(_ error: PubSubPushAuthenticationError) {
        lastFailure = error
    }

    /// Whether a lookup may start a fetch: none yet, the last one `minimumInterval` ago or
    /// more, or the clock went back behind it.
    private func mayFetch(now: Date) -> Bool {
        guard let lastAttempt else { return true }
        let since = now.timeIntervalSince(lastAttempt)
        return since >= minimumInterval || since < 0
    }
}
