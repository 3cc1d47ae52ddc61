import Crypto
public import Model
public import RPC
public import Wire

/// The ledger calls the verifier makes, typed, over the verifier's RPC client of the ledger.
public struct LedgerClient: Sendable {
    let rpc: RPCClient

    public init(rpc: RPCClient) { self.rpc = rpc }

    public func recordNotification(_ request: RecordNotificationRequest) async throws(RPCError)
        -> RecordNotificationResponse
    {
        try await rpc.call(LedgerRPC.recordNotification, request)
    }

    public func recordVerifiedState(_ request: RecordVerifiedStateRequest) async throws(RPCError)
        -> RecordVerifiedStateResponse
    {
        try await rpc.call(LedgerRPC.recordVerifiedState, request)
    }

    /// Records a state fetched from a store with its event, keyed by content: a retry that
    /// fetched the same state replays; a newer state is a new fact. Returns the state recorded.
    func recordFetchedState(
        _ subscription: Subscription, event: LifecycleEvent, periods: [Period] = [], keyPrefix: String
    ) async throws -> Subscription {
        try await recordContent(
            RecordVerifiedStateRequest(subscription: subscription, events: [event], periods: periods),
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

    public func linkAccount(_ request: LinkAccountRequest) async throws(RPCError) -> LinkAccountResponse {
        try await rpc.call(LedgerRPC.linkAccount, request)
    }

    public func markInbox(_ request: MarkInboxRequest) async throws(RPCError) -> MarkInboxResponse {
        try await rpc.call(LedgerRPC.markInbox, request)
    }

    public func listInbox(_ request: ListInboxRequest) async throws(RPCError) -> ListInboxResponse {
        try await rpc.call(LedgerRPC.listInbox, request)
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
            let response: GetSubscriptionResponse = try await rpc.call(LedgerRPC.getSubscription, request)
            return response
        } catch  where error.code == .notFound {
            return nil
        }
    }

    public func listSubscriptions(_ request: ListSubscriptionsRequest) async throws(RPCError)
        -> ListSubscriptionsResponse
    {
        try await rpc.call(LedgerRPC.listSubscriptions, request)
    }

    public func cursor(_ name: String) async throws(RPCError) -> Cursor {
        try await rpc.call(LedgerRPC.getCursor, GetCursorRequest(name: name))
    }

    public func advanceCursor(_ name: String, to value: Int64) async throws(RPCError) -> Cursor {
        try await rpc.call(LedgerRPC.advanceCursor, AdvanceCursorRequest(name: name, value: value))
    }

    public func account(_ accountID: String) async throws(RPCError) -> GetAccountResponse {
        try await rpc.call(LedgerRPC.getAccount, GetAccountRequest(accountID: accountID))
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
