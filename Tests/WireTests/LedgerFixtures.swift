import Model
import Testing
import Wire

/// Messages with every field set to a distinctive non-default value: unicode strings, extreme
/// and negative integers, several elements in every repeated field. `n` varies them so that
/// elements of one array differ from each other.
enum LedgerFixtures {
    /// Multi-byte UTF-8 of every length: Latin-1, CJK, an emoji outside the BMP, a combining mark.
    static let unicode = "ünïcødé ✓ 订阅 🎟️ e\u{301}"

    static func key(_ n: Int) -> SubscriptionKey {
        SubscriptionKey(
            store: n.isMultiple(of: 2) ? .apple : .google, environment: n.isMultiple(of: 3) ? .production : .sandbox,
            storeID: "store-id-\(n)-\(unicode)")
    }

    static func subscription(_ n: Int) -> Subscription {
        let t = Int64(n) * 1_000
        return Subscription(
            key: key(n), accountID: "account-\(n)-👤", productID: "product.\(n)", basePlanID: "plan-\(n)",
            offerID: "offer-\(n)", productKind: n.isMultiple(of: 2) ? .autoRenewable : .nonConsumable,
            state: n.isMultiple(of: 2) ? .gracePeriod : .revoked, ownership: .familyShared,
            purchaseTimeMilliseconds: -1_000 - t, originalPurchaseTimeMilliseconds: Int64.min + t,
            expiresTimeMilliseconds: Int64.max - t, graceExpiresTimeMilliseconds: 1_790_000_000_000 + t,
            revokedTimeMilliseconds: -1 - t, revocationReason: "reason \(n) – remboursé", autoRenew: true,
            autoRenewProductID: "product.downgrade.\(n)", acknowledged: true,
            storeTimeMilliseconds: 1_700_000_000_001 + t,
            verifiedTimeMilliseconds: 1_700_000_000_002 + t, replacesStoreID: "old-token-\(n)",
            replacedByStoreID: "new-token-\(n)", storeAccountRef: "7f3c…\(n)", bundleOrPackage: "com.example.app\(n)",
            latestOrderID: "GPA.\(n)-\(unicode)")
    }

    static func event(_ n: Int) -> LifecycleEvent {
        LifecycleEvent(
            position: UInt64.max - UInt64(n), key: key(n + 1), kind: n.isMultiple(of: 2) ? .stateRefreshed : .other,
            storeTimeMilliseconds: -86_400_000 - Int64(n), verifiedTimeMilliseconds: Int64.max - Int64(n),
            accountID: "account-\(n)", otherAccountID: "other-\(n)-\(unicode)", storeType: "DID_CHANGE_RENEWAL_STATUS",
            storeSubtype: "AUTO_RENEW_DISABLED_\(n)", notificationID: "notification-\(n)", state: .billingRetry,
            rawPayload: "eyJhbGciOiJFUzI1NiJ9.\(n).sig", detail: "detail \(n): \(unicode)")
    }

    static func link(_ n: Int) -> AccountLink {
        AccountLink(
            accountID: "account-\(n)-\(unicode)", key: key(n + 2), storeAccountRef: "ref-\(n)",
            linkedTimeMilliseconds: Int64.min + Int64(n))
    }

    static func inboxEntry(_ n: Int) -> InboxEntry {
        InboxEntry(
            store: n.isMultiple(of: 2) ? .google : .apple, environment: .sandbox, notificationID: "uuid-\(n)",
            notificationType: "SUBSCRIBED", subtype: "RESUBSCRIBE_\(n)", signedTimeMilliseconds: -5 - Int64(n),
            receivedTimeMilliseconds: Int64.max - Int64(n), status: .failed, attempts: UInt32.max - UInt32(n),
            lastError: "store said: \(unicode)", key: key(n + 3),
            rawPayload: "{\"data\":\"\(n)\",\"x\":\"\(unicode)\"}",
            pushAuthentication: pushAuthentication(n))
    }

    static func pushAuthentication(_ n: Int) -> PushAuthentication {
        PushAuthentication(
            iss: "https://accounts.google.com", email: "push-\(n)@example.iam.gserviceaccount.com",
            aud: "https://verifier.example.com/google/\(unicode)", kid: "kid-\(n)",
            iatMilliseconds: 1_700_000_000_000 + Int64(n), expMilliseconds: Int64.max - Int64(n),
            checkedTimeMilliseconds: -9 - Int64(n))
    }

    /// One message of every ledger type and of the common types, every field set.
    static let fullMessages: [MessageCase] = [
        MessageCase(key(1)),
        MessageCase(subscription(1)),
        MessageCase(event(1)),
        MessageCase(link(1)),
        MessageCase(inboxEntry(1)),
        MessageCase(RecordNotificationRequest(entry: inboxEntry(2))),
        MessageCase(RecordNotificationResponse(duplicate: true, entry: inboxEntry(3))),
        MessageCase(
            RecordVerifiedStateRequest(
                idempotencyKey: "idem-\(unicode)", subscription: subscription(2),
                events: [event(1), event(2), event(3)],
                notificationID: "notification-9")),
        MessageCase(
            RecordVerifiedStateResponse(subscription: subscription(3), applied: true, replayed: true, position: .max)),
        MessageCase(
            LinkAccountRequest(
                idempotencyKey: "idem-link", key: key(4), accountID: "account-\(unicode)", storeAccountRef: "ref-x",
                policy: .refuse)),
        MessageCase(
            LinkAccountResponse(
                outcome: .alreadyLinked, previousAccountID: "previous-👤", subscription: subscription(4),
                position: UInt64.max - 1)),
        MessageCase(GetSubscriptionRequest(key: key(5))),
        MessageCase(GetSubscriptionResponse(subscription: subscription(5))),
        MessageCase(GetAccountRequest(accountID: "account-\(unicode)")),
        MessageCase(
            GetAccountResponse(
                accountID: "account-7", subscriptions: [subscription(6), subscription(7), subscription(8)],
                links: [link(1), link(2)])),
        MessageCase(
            GetHistoryRequest(accountID: "account-8", key: key(6), pageSize: .max, pageToken: "page-\(unicode)")),
        MessageCase(GetHistoryResponse(events: [event(4), event(5), event(6), event(7)], nextPageToken: "next-✓")),
        MessageCase(ListInboxRequest(status: .processed, store: .google, pageSize: 500, pageToken: "page-2")),
        MessageCase(
            ListInboxResponse(entries: [inboxEntry(4), inboxEntry(5), inboxEntry(6)], nextPageToken: "next-3")),
        MessageCase(
            MarkInboxRequest(
                store: .apple, notificationID: "uuid-\(unicode)", status: .failed, error: "bad: \(unicode)")),
        MessageCase(MarkInboxResponse(entry: inboxEntry(7))),
        MessageCase(ReplayInboxRequest(store: .google, notificationID: "message-\(unicode)")),
        MessageCase(
            SnapshotChunk(
                subscriptions: [subscription(9), subscription(10)], links: [link(3), link(4), link(5)], complete: true,
                position: .max)),
        MessageCase(WatchChangesRequest(after: .max)),
        MessageCase(
            Change(
                position: .max, committedTimeMilliseconds: Int64.min, kind: .unlink, subscription: subscription(11),
                link: link(6), events: [event(8), event(9)])),
    ]

    /// The default value of every ledger message type; proto3 writes none of its fields.
    static let defaultMessages: [MessageCase] = [
        MessageCase(InboxEntry()),
        MessageCase(RecordNotificationRequest()),
        MessageCase(RecordNotificationResponse()),
        MessageCase(RecordVerifiedStateRequest()),
        MessageCase(RecordVerifiedStateResponse()),
        MessageCase(LinkAccountRequest()),
        MessageCase(LinkAccountResponse()),
        MessageCase(GetSubscriptionRequest()),
        MessageCase(GetSubscriptionResponse()),
        MessageCase(GetAccountRequest()),
        MessageCase(GetAccountResponse()),
        MessageCase(GetHistoryRequest()),
        MessageCase(GetHistoryResponse()),
        MessageCase(ListInboxRequest()),
        MessageCase(ListInboxResponse()),
        MessageCase(MarkInboxRequest()),
        MessageCase(MarkInboxResponse()),
        MessageCase(ReplayInboxRequest()),
        MessageCase(SnapshotRequest()),
        MessageCase(SnapshotChunk()),
        MessageCase(WatchChangesRequest()),
        MessageCase(Change()),
    ]
}

/// One message value with its type's decoder, so a parameterized test can run over many types.
struct MessageCase: Sendable, CustomTestStringConvertible {
    let protoName: String
    let value: any ProtoMessage
    let decode: @Sendable ([UInt8]) throws -> any ProtoMessage
    let isEqual: @Sendable (any ProtoMessage) -> Bool

    init<M: ProtoMessage & Equatable>(_ value: M) {
        protoName = M.protoName
        self.value = value
        decode = { bytes in try M(serialized: bytes) }
        isEqual = { other in (other as? M) == value }
    }

    var testDescription: String { protoName }
}
