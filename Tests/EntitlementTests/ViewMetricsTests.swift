import Foundation
import Model
import Observability
import Testing
import Wire

@testable import EntitlementService

@Suite("Entitlement view metrics")
struct ViewMetricsTests {
    typealias Fixtures = EntitlementViewTests
    static let now = Fixtures.now
    static let day = Fixtures.day

    /// The view's families as a scrape at `now` under the fixtures' policy writes them.
    static func page(_ view: EntitlementView, at now: Int64 = now) -> MetricsRegistry {
        let registry = MetricsRegistry()
        registry.addCollector { text in view.writeMetrics(policy: Fixtures.policy, now: now, into: &text) }
        return registry
    }

    static func active(_ registry: MetricsRegistry, _ store: String, _ state: String, _ product: String) -> Double? {
        registry.value(#"entitlement_active_subscriptions{product="\#(product)",state="\#(state)",store="\#(store)"}"#)
    }

    /// A Play subscription of `account` past its period's end at `now`, in `state`, with a grace
    /// end two days on.
    static func lapsed(_ token: String, account: String?, state: SubscriptionState) -> Subscription {
        var subscription = Fixtures.google(token, account: account, expires: now - day)
        subscription.state = state
        subscription.graceExpiresTimeMilliseconds = now + 2 * day
        return subscription
    }

    @Test(
        "held subscriptions count by store, state and the product the policy names; expired, revoked and unheld ones do not"
    )
    func activeSubscriptions() {
        let view = EntitlementView()
        view.load(
            [
                Fixtures.apple("2000000001", account: "a1", expires: Self.now + Self.day),
                Fixtures.apple("2000000002", account: "a2", expires: Self.now + Self.day),
                Fixtures.apple("2000000003", account: "a3", product: "com.example.unlisted", expires: Self.now),
                Fixtures.apple("2000000004", account: "a4", expires: Self.now - Self.day, state: .expired),
                Fixtures.apple("2000000005", account: nil, expires: Self.now + Self.day),
                Fixtures.google("tok-1", account: "a1", expires: Self.now + Self.day),
                Self.lapsed("tok-2", account: "a2", state: .gracePeriod),
            ], position: 1)
        var page = Self.page(view)
        #expect(Self.active(page, "apple", "active", "com.example.pro.monthly") == 2)
        #expect(Self.active(page, "apple", "active", "other") == 1)
        #expect(Self.active(page, "apple", "expired", "com.example.pro.monthly") == nil)
        #expect(Self.active(page, "google", "cancelled", "pro_sub") == 1)
        #expect(Self.active(page, "google", "grace_period", "pro_sub") == 1)

        // A renewal lapses into expiry, a transfer moves one, an unheld one is claimed.
        view.apply(
            position: 2,
            subscription: Fixtures.apple("2000000001", account: "a1", expires: Self.now - 1, state: .expired))
        view.apply(position: 3, subscription: Fixtures.apple("2000000002", account: "a9", expires: Self.now + Self.day))
        view.apply(position: 4, subscription: Fixtures.apple("2000000005", account: "a5", expires: Self.now + Self.day))
        page = Self.page(view)
        #expect(Self.active(page, "apple", "active", "com.example.pro.monthly") == 2)
        // The counts kept as changes came are those a count from scratch gives.
        let kept = view.lock.read { _ in view.tables.heldByKind }
        view.lock.write { _ in view.tables.recountHeld() }
        #expect(view.lock.read { _ in view.tables.heldByKind } == kept)
    }

    @Test("access beyond the last verified period: a lapsed subscription the rules still allow, until its grace ends")
    func accessBeyondVerified() {
        let view = EntitlementView()
        view.load(
            [
                Self.lapsed("tok-grace", account: "a1", state: .gracePeriod),
                // Billing retry gives no access by default.
                Self.lapsed("tok-retry", account: "a2", state: .billingRetry),
                Self.lapsed("tok-unheld", account: nil, state: .gracePeriod),
                Fixtures.apple("2000000001", account: "a3", expires: Self.now + Self.day),
            ], position: 1)
        #expect(Self.page(view).value(#"entitlement_access_beyond_verified{store="google"}"#) == 1)
        #expect(Self.page(view).value(#"entitlement_access_beyond_verified{store="apple"}"#) == 0)
        // Before the period's end it is within what was verified; after the grace end, no access.
        #expect(
            Self.page(view, at: Self.now - 2 * Self.day).value(#"entitlement_access_beyond_verified{store="google"}"#)
                == 0)
        #expect(
            Self.page(view, at: Self.now + 3 * Self.day).value(#"entitlement_access_beyond_verified{store="google"}"#)
                == 0)
        // The store verifies a renewal: a new period, no longer beyond it.
        view.apply(
            position: 2, subscription: Fixtures.google("tok-grace", account: "a1", expires: Self.now + 30 * Self.day))
        #expect(Self.page(view).value(#"entitlement_access_beyond_verified{store="google"}"#) == 0)
    }

    @Test("a view loaded from a checkpoint counts what the view written had")
    func fromCheckpoint() throws {
        let view = EntitlementView()
        view.load(
            [
                Fixtures.apple("2000000001", account: "a1", expires: Self.now + Self.day),
                Self.lapsed("tok-grace", account: "a1", state: .gracePeriod),
            ], position: 1)
        let path = ViewCheckpointTests.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try ViewCheckpoint(path: path).write(view, policyVersion: "", now: Self.now)
        let loaded = EntitlementView()
        _ = try ViewCheckpoint(path: path).load(into: loaded)
        #expect(Self.page(loaded).render() == Self.page(view).render())
        #expect(Self.active(Self.page(loaded), "google", "grace_period", "pro_sub") == 1)
        #expect(Self.page(loaded).value(#"entitlement_access_beyond_verified{store="google"}"#) == 1)
    }
}
