import Model
import Testing
import Wire

/// The events a change of the feed gives (`FeedEvents`), which the event publisher logs and
/// `subctl events verify` checks the log against.
@Suite("FeedEvents: the lifecycle events of a feed change")
struct FeedEventsTests {
    static let t0: Int64 = 1_790_000_000_000
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000001")

    @Test("a change's events: ids from its position and their place, the account, the state after it")
    func feedEvents() {
        var subscription = Subscription(
            key: Self.key, accountID: "acct-1", productID: "pro.monthly", state: .active,
            storeTimeMilliseconds: Self.t0)
        subscription.autoRenew = true
        let change = Change(
            position: 42, committedTimeMilliseconds: Self.t0 + 5, kind: .subscription, subscription: subscription,
            events: [
                LifecycleEvent(
                    key: Self.key, kind: .renewed, storeTimeMilliseconds: Self.t0, storeType: "DID_RENEW"),
                LifecycleEvent(key: Self.key, kind: .renewalDisabled, storeTimeMilliseconds: Self.t0),
            ])
        let events = FeedEvents.events(of: change)
        #expect(events.map(\.id) == ["evt_42_0", "evt_42_1"])
        #expect(events.map(\.type) == ["subscription.renewed", "subscription.renewal_disabled"])
        #expect(events.allSatisfy { $0.accountID == "acct-1" && $0.position == 42 && $0.key == Self.key })
        #expect(events[0].subscription == subscription && events[0].storeType == "DID_RENEW")
        #expect(events[0].storeTimeMilliseconds == Self.t0 && events[0].recordedTimeMilliseconds == Self.t0 + 5)
        // An account event names no subscription; a deletion names no account.
        let deletion = Change(
            position: 43, kind: .account,
            events: [
                LifecycleEvent(
                    key: SubscriptionKey(store: .promotional, environment: .production, storeID: ""),
                    kind: .accountDeleted)
            ])
        let deleted = FeedEvents.events(of: deletion)
        #expect(deleted.map(\.type) == ["account.deleted"])
        #expect(deleted.first?.key == nil && deleted.first?.accountID == nil && deleted.first?.subscription == nil)
    }

    @Test("ids of the shape evt_<position>_<index> give their position; access and test event ids none")
    func positionOfID() {
        #expect(FeedEvents.position(ofID: FeedEvents.id(position: 42, index: 3)) == 42)
        #expect(FeedEvents.position(ofID: "evt_0_0") == 0)
        for id in [
            "evt_40_granted_0123456789abcdef", "evt_test_00112233", "evt_40", "evt_40_", "evt__0", "evt_4x_0",
            "evt_40_0_1", "evt_-1_0", "evt_+1_0", "xvt_1_0", "evt_99999999999999999999_0", "evt_٤_0",
        ] {
            #expect(FeedEvents.position(ofID: id) == nil, "\(id)")
        }
    }
}
