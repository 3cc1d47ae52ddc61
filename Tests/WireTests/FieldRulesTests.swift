import Model
import Testing
import Wire

/// How absent values, unknown enum numbers and missing required sub-messages cross the wire.
@Suite("Field rules")
struct FieldRulesTests {
    @Test("nil times and ids are the proto3 zero value; zero and empty come back as nil")
    func absentIsZero() throws {
        let key = SubscriptionKey(store: .apple, environment: .production, storeID: "1")
        let bare = Subscription(key: key)
        // Only the key (field 1, 7 bytes) is written.
        #expect(bare.serialized() == [0x0a, 0x07, 0x08, 0x01, 0x10, 0x01, 0x1a, 0x01, 0x31])
        var zeroed = bare
        zeroed.accountID = ""
        zeroed.expiresTimeMilliseconds = 0
        zeroed.productKind = ProductKind(rawValue: 0)
        #expect(zeroed.serialized() == bare.serialized())
        let decoded = try Subscription(serialized: zeroed.serialized())
        #expect(decoded == bare)
        #expect(decoded.accountID == nil)
        #expect(decoded.expiresTimeMilliseconds == nil)

        let event = LifecycleEvent(key: key, kind: .purchased)
        #expect(try LifecycleEvent(serialized: event.serialized()).position == nil)
    }

    @Test("negative and extreme times are kept (only 0 means absent)")
    func extremeTimes() throws {
        let key = SubscriptionKey(store: .google, environment: .sandbox, storeID: "t")
        for time: Int64 in [-1, Int64.min, Int64.max, -62_135_596_800_000] {
            let link = AccountLink(accountID: "a", key: key, linkedTimeMilliseconds: time)
            #expect(try AccountLink(serialized: link.serialized()).linkedTimeMilliseconds == time)
        }
    }

    @Test("enum numbers this version does not know are kept as .unknown and re-encoded unchanged")
    func unknownOpenEnums() throws {
        var subscription = LedgerFixtures.subscription(1)
        subscription.productKind = .unknown(40)
        subscription.ownership = .unknown(-7)
        var event = LedgerFixtures.event(1)
        event.kind = .unknown(1_000)
        let change = Change(position: 5, kind: .unknown(Int32.max), subscription: subscription, events: [event])
        let decoded = try Change(serialized: change.serialized())
        #expect(decoded == change)
        #expect(decoded.kind == .unknown(Int32.max))
        #expect(decoded.subscription?.ownership == .unknown(-7))
        #expect(decoded.events.first?.kind == .unknown(1_000))

        // An unknown number read from bytes, not made in Swift: LinkAccountResponse.outcome = 77.
        let response = try LinkAccountResponse(serialized: [0x08, 77])
        #expect(response.outcome == .unknown(77))
        #expect(response.outcome?.rawValue == 77)
        #expect(LinkOutcome(rawValue: 2) == .alreadyLinked)
        #expect(InboxStatus(rawValue: 0) == nil)
    }

    @Test("a store, environment or state number Model cannot hold is INVALID_ARGUMENT naming the field path")
    func unknownClosedEnums() throws {
        let request = "payload is not a valid subscriptions.ledger.v1.GetSubscriptionRequest"
        // key {store: 7, environment: 1}
        #expect(throws: RPCError(.invalidArgument, "\(request): key.store has unknown value 7")) {
            try GetSubscriptionRequest(serialized: [0x0a, 0x04, 0x08, 0x07, 0x10, 0x01])
        }
        // key {store: 1}: environment unspecified
        #expect(throws: RPCError(.invalidArgument, "\(request): key.environment is unspecified")) {
            try GetSubscriptionRequest(serialized: [0x0a, 0x02, 0x08, 0x01])
        }
        // ListInboxRequest.store = 4
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.ledger.v1.ListInboxRequest: store has unknown value 4")
        ) {
            try ListInboxRequest(serialized: [0x10, 0x04])
        }
        // A valid first event, then a second whose state is 42: the path names the element.
        let first = GetHistoryResponse(events: [LedgerFixtures.event(1)]).serialized()
        let secondEvent: [UInt8] = [0x12, 0x07, 0x08, 0x01, 0x10, 0x01, 0x1a, 0x01, 0x6b, 0x58, 0x2a]
        let bytes = first + [0x0a, UInt8(secondEvent.count)] + secondEvent
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.ledger.v1.GetHistoryResponse: events[1].state has unknown value 42"
            )
        ) {
            try GetHistoryResponse(serialized: bytes)
        }
    }

    @Test("a Subscription, LifecycleEvent or AccountLink without its key is INVALID_ARGUMENT")
    func missingKey() throws {
        // GetSubscriptionResponse{subscription{product_id: "p"}}
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.ledger.v1.GetSubscriptionResponse: subscription.key is missing")
        ) {
            try GetSubscriptionResponse(serialized: [0x0a, 0x03, 0x1a, 0x01, 0x70])
        }
        // SnapshotChunk{links[0]{account_id: "a"}}
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.ledger.v1.SnapshotChunk: links[0].key is missing")
        ) {
            try SnapshotChunk(serialized: [0x12, 0x03, 0x0a, 0x01, 0x61])
        }
        #expect(
            throws: RPCError(
                .invalidArgument, "payload is not a valid subscriptions.common.v1.LifecycleEvent: key is missing")
        ) {
            try LifecycleEvent(serialized: [0x18, 0x01])
        }
        // In the ledger messages a key is optional: absence is nil, for the service to judge.
        #expect(try GetHistoryRequest(serialized: [0x0a, 0x01, 0x61]) == GetHistoryRequest(accountID: "a"))
    }

    @Test("a string that is not UTF-8 is INVALID_ARGUMENT naming the field, never repaired")
    func invalidUTF8() {
        // account_id = C3 28: a two-byte lead followed by an ASCII byte.
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.ledger.v1.GetAccountRequest: account_id is not valid UTF-8")
        ) {
            try GetAccountRequest(serialized: [0x0a, 0x02, 0xc3, 0x28])
        }
        // Repairing would make two different store ids the same key; key {1, 1, store_id FF}.
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.ledger.v1.GetSubscriptionRequest: key.store_id is not valid UTF-8"
            )
        ) {
            try GetSubscriptionRequest(serialized: [0x0a, 0x07, 0x08, 0x01, 0x10, 0x01, 0x1a, 0x01, 0xff])
        }
    }
}
