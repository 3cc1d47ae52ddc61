import Crypto
import Foundation
import Model
public import Wire

/// Promotional grants: a capability given to an account by this backend, not sold by a store.
/// A grant is kept like a store's purchase (store PROMOTIONAL, its id the store id, the
/// capability its product id), so the change feed, snapshots, history and the account's links
/// carry it with no path of their own, and the entitlement view counts it like any purchase.
extension LedgerAccounts {
    /// A grant's duration, at most: a century.
    static let maxGrantMilliseconds: Int64 = 100 * 366 * 86_400_000

    /// The key of the grant made under `idempotencyKey`: the same key is the same grant.
    static func grantKey(idempotencyKey: String) -> SubscriptionKey {
        let digest = Digest.sha256Hex(Array("promotional-grant\u{0}\(idempotencyKey)".utf8))
        return SubscriptionKey(store: .promotional, environment: .production, storeID: "grant_" + digest.prefix(32))
    }

    /// `GrantEntitlement` checked and ready for the writer; `actor` is the caller, for the audit
    /// trail.
    /// `grantEntitlementWrite`, run: `actor` is who asked, for the audit trail.
    public func grantEntitlement(_ request: GrantEntitlementRequest, actor: String) async throws
        -> GrantEntitlementResponse
    {
        try await transactions.write(try grantEntitlementWrite(request, actor: actor))
    }

    func grantEntitlementWrite(_ request: GrantEntitlementRequest, actor: String) throws -> WriteBody<
        GrantEntitlementResponse
    > {
        try Ledger.check(request.idempotencyKey, GrantEntitlementRequest.Limits.idempotencyKey)
        try Ledger.check(request.accountID, GrantEntitlementRequest.Limits.accountID)
        try Ledger.check(request.capability, GrantEntitlementRequest.Limits.capability)
        try Ledger.check(request.reason, GrantEntitlementRequest.Limits.reason)
        let at = transactions.now()
        let end: Int64?
        switch (request.untilMilliseconds, request.durationMilliseconds) {
        case (nil, nil):
            end = nil
        case (let until?, nil):
            guard until > at else {
                throw LedgerError.invalidArgument(
                    "until_ms \(until) is not after now (\(at)): the grant would give nothing")
            }
            guard until - at <= Self.maxGrantMilliseconds else {
                throw LedgerError.invalidArgument("until_ms \(until) is more than a century away; omit it for no end")
            }
            end = until
        case (nil, let duration?):
            guard duration > 0, duration <= Self.maxGrantMilliseconds else {
                throw LedgerError.invalidArgument(
                    "duration_ms \(duration) is not between 1 and a century (\(Self.maxGrantMilliseconds))")
            }
            end = at + duration
        default:
            throw LedgerError.invalidArgument("give until_ms or duration_ms, not both")
        }
        let hash = Digest.sha256Hex(request.serialized())
        let key = Self.grantKey(idempotencyKey: request.idempotencyKey)
        return { tx in
            if var replay = try LedgerStore(tx).replay(request.idempotencyKey, hash, as: GrantEntitlementResponse.self)
            {
                replay.replayed = true
                return replay
            }
            guard try LedgerStore(tx).subscriptionRow(key) == nil else {
                throw LedgerError.failedPrecondition("grant \(key.storeID) exists already")
            }
            let position = try LedgerStore(tx).nextPosition()
            // Without an end it is a lifetime grant; with one, active until its end (the view
            // judges the end by time: nothing needs to expire it).
            let grant = Subscription(
                key: key, accountID: request.accountID, productID: request.capability,
                productKind: end == nil ? .nonConsumable : .nonRenewing, state: .active, ownership: .purchased,
                purchaseTimeMilliseconds: at, originalPurchaseTimeMilliseconds: at, expiresTimeMilliseconds: end,
                autoRenew: false, storeTimeMilliseconds: at, verifiedTimeMilliseconds: at)
            let event = LifecycleEvent(
                position: position, key: key, kind: .grantCreated, storeTimeMilliseconds: at,
                verifiedTimeMilliseconds: at, accountID: request.accountID, state: .active,
                detail: Self.grantDetail(request.capability, end: end, reason: request.reason), actor: actor,
                reason: request.reason)
            let link = AccountLink(accountID: request.accountID, key: key, linkedTimeMilliseconds: at)
            try LedgerStore(tx).saveLink(link)
            try LedgerStore(tx).saveSubscription(grant, position: position)
            try LedgerStore(tx).insertEvent(event)
            try LedgerStore(tx).appendChange(
                Change(
                    position: position, committedTimeMilliseconds: at, kind: .link, subscription: grant, link: link,
                    events: [event]))
            let response = GrantEntitlementResponse(grant: grant, replayed: false, position: position)
            try LedgerStore(tx).remember(request.idempotencyKey, hash, response, at: at)
            return response
        }
    }

    static func grantDetail(_ capability: String, end: Int64?, reason: String?) -> String {
        let until = end.map { "until \(EpochTime.iso8601($0))" } ?? "with no end"
        return "\(capability) \(until)" + (reason.map { ": \($0)" } ?? "")
    }

    /// `RevokeGrant` checked and ready for the writer.
    /// `revokeGrantWrite`, run: `actor` is who asked, for the audit trail.
    public func revokeGrant(_ request: RevokeGrantRequest, actor: String) async throws -> RevokeGrantResponse {
        try await transactions.write(try revokeGrantWrite(request, actor: actor))
    }

    func revokeGrantWrite(_ request: RevokeGrantRequest, actor: String) throws -> WriteBody<RevokeGrantResponse> {
        try Ledger.check(request.grantID, RevokeGrantRequest.Limits.grantID)
        try Ledger.check(request.reason, RevokeGrantRequest.Limits.reason)
        let key = SubscriptionKey(store: .promotional, environment: .production, storeID: request.grantID)
        let at = transactions.now()
        return { tx in
            guard var grant = try LedgerStore(tx).subscriptionRow(key) else {
                throw LedgerError.notFound("no grant \(request.grantID)")
            }
            if grant.state == .revoked {
                return RevokeGrantResponse(
                    grant: grant, revoked: false, position: UInt64(try LedgerStore(tx).lastPosition()))
            }
            let position = try LedgerStore(tx).nextPosition()
            grant.state = .revoked
            grant.revokedTimeMilliseconds = at
            grant.revocationReason = request.reason
            grant.storeTimeMilliseconds = at
            grant.verifiedTimeMilliseconds = at
            let event = LifecycleEvent(
                position: position, key: key, kind: .grantRevoked, storeTimeMilliseconds: at,
                verifiedTimeMilliseconds: at, accountID: grant.accountID, state: .revoked, detail: request.reason,
                actor: actor, reason: request.reason)
            try LedgerStore(tx).saveSubscription(grant, position: position)
            try LedgerStore(tx).insertEvent(event)
            try LedgerStore(tx).appendChange(
                Change(
                    position: position, committedTimeMilliseconds: at, kind: .subscription, subscription: grant,
                    events: [event]))
            return RevokeGrantResponse(grant: grant, revoked: true, position: position)
        }
    }
}
