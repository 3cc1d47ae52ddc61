public import Clients
import Crypto
public import Model
import RPC
public import Wire

/// The ledger calls the verifier makes beyond the generated ones: records keyed by content,
/// and reads that answer nil or nothing where the ledger has nothing.
extension LedgerClientProtocol {
    /// Records a state fetched from a store with its event, keyed by content: a retry that
    /// fetched the same state replays; a newer state is a new fact. Returns the state recorded.
    /// The inbox entry `completing` is marked processed by the same write (a replay too).
    func recordFetchedState(
        _ subscription: Subscription, event: LifecycleEvent, periods: [Period] = [],
        completing notificationID: String? = nil, keyPrefix: String
    ) async throws -> Subscription {
        try await recordContent(
            RecordVerifiedStateRequest(
                subscription: subscription, events: [event], notificationID: notificationID, periods: periods),
            keyPrefix: keyPrefix
        ).subscription ?? subscription
    }

    /// Records `request` under an idempotency key made of `keyPrefix` and a digest of its content:
    /// processing the same evidence again (a retry after a timeout whose commit landed, an
    /// operator's replay) replays the first answer, and newer evidence is a new write. A key is
    /// never reused with other content.
    func recordContent(_ request: RecordVerifiedStateRequest, keyPrefix: String) async throws(RPCError)
        -> RecordVerifiedStateResponse
    {
        var record = request
        record.idempotencyKey = ""
        let digest = Digest.sha256Hex(record.serialized()).prefix(48)
        record.idempotencyKey = String(keyPrefix.prefix(128 - digest.count)) + digest
        return try await recordVerifiedState(record)
    }

    /// The ledger's change-feed position now: at or past every write this caller made before
    /// (what a caller gives CheckAccess as `min_position` to read its own writes).
    public func feedPosition() async throws(RPCError) -> UInt64 {
        try await getFeedPosition(GetFeedPositionRequest()).position
    }

    /// The recorded subscription, or nil when the ledger has none (the state only).
    public func subscription(_ key: SubscriptionKey) async throws(RPCError) -> Subscription? {
        try await get(GetSubscriptionRequest(key: key, stateOnly: true))?.subscription
    }

    /// The recorded subscription with its recorded periods (the newest 100, each as recorded,
    /// not joined), or nil when the ledger has none.
    public func recordedState(_ key: SubscriptionKey) async throws(RPCError) -> (Subscription, [Period])? {
        try await get(GetSubscriptionRequest(key: key)).flatMap { response in
            response.subscription.map { ($0, response.periods) }
        }
    }

    private func get(_ request: GetSubscriptionRequest) async throws(RPCError) -> GetSubscriptionResponse? {
        do {
            let response = try await getSubscription(request)
            return response
        } catch  where error.code == .notFound {
            return nil
        }
    }

    public func cursor(_ name: String) async throws(RPCError) -> Cursor {
        try await getCursor(GetCursorRequest(name: name))
    }

    public func advanceCursor(_ name: String, to value: Int64) async throws(RPCError) -> Cursor {
        try await advanceCursor(AdvanceCursorRequest(name: name, value: value))
    }

    public func account(_ accountID: String) async throws(RPCError) -> GetAccountResponse {
        try await getAccount(GetAccountRequest(accountID: accountID))
    }

    /// The subscriptions linked to `accountID` now; none for an account the ledger does not
    /// know (a restore whose purchases stayed with another account, say).
    public func subscriptions(ofAccount accountID: String) async throws(RPCError) -> [Subscription] {
        do {
            return try await account(accountID).subscriptions
        } catch  where error.code == .notFound {
            return []
        }
    }
}
