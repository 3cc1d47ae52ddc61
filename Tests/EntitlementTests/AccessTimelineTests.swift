import Foundation
import Model
import Testing
import Wire

@testable import EntitlementService

/// `GetAccessTimeline` from the view: intervals of one kind each, answered as CheckAccess answers
/// each instant in them.
@Suite("Access timeline")
struct AccessTimelineTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_790_000_000_000
    static let account = "acct-timeline"
    static let policy = try! ProductPolicy(
        parsing: """
            capability pro
              apple pro.monthly
              google pro_sub
            capability extra
              google extra_addon
            """)

    static func time(_ days: Int64) -> Int64 { t0 + days * day }

    /// An App Store chain: a free trial month, a paid month, a grace that ended in a recovery on
    /// day 65, the recovered month; cancelled and expired on day 95.
    static let apple: Subscription = {
        var subscription = Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: "2000001"), accountID: account,
            productID: "pro.monthly", productKind: .autoRenewable, state: .expired, ownership: .purchased,
            purchaseTimeMilliseconds: time(65), expiresTimeMilliseconds: time(95), storeTimeMilliseconds: time(95))
        subscription.periods = [
            Period(
                periodID: "1", productID: "pro.monthly", startMilliseconds: time(0), endMilliseconds: time(30),
                offerType: .freeTrial, productKind: .autoRenewable),
            Period(
                periodID: "2", productID: "pro.monthly", startMilliseconds: time(30), endMilliseconds: time(60),
                productKind: .autoRenewable),
            Period(
                periodID: "3", productID: "pro.monthly", startMilliseconds: time(65), endMilliseconds: time(95),
                productKind: .autoRenewable),
        ]
        subscription.statusIntervals = [
            StatusInterval(
                state: .gracePeriod, startMilliseconds: time(60), endMilliseconds: time(65),
                shownTimeMilliseconds: time(60), endedTimeMilliseconds: time(65))
        ]
        return subscription
    }()

    /// A Play subscription from day 100, paused on days 130 to 140 (its resumed order chained
    /// over the pause, as Play gives it no start), revoked on day 150.
    static let google: Subscription = {
        var subscription = Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: "token"), accountID: account,
            productID: "pro_sub", productKind: .autoRenewable, state: .revoked, ownership: .purchased,
            purchaseTimeMilliseconds: time(100), expiresTimeMilliseconds: time(170),
            revokedTimeMilliseconds: time(150), storeTimeMilliseconds: time(150))
        subscription.periods = [
            Period(
                periodID: "GPA.1/pro_sub", productID: "pro_sub", startMilliseconds: time(100),
                endMilliseconds: time(130), productKind: .autoRenewable),
            Period(
                periodID: "GPA.1..0/pro_sub", productID: "pro_sub", startMilliseconds: time(130),
                endMilliseconds: time(170), revokedTimeMilliseconds: time(150), productKind: .autoRenewable),
        ]
        subscription.statusIntervals = [
            StatusInterval(state: .paused, startMilliseconds: time(130), endMilliseconds: time(140))
        ]
        return subscription
    }()

    /// A grant by support from day 200 to day 210.
    static let grant = Subscription(
        key: SubscriptionKey(store: .promotional, environment: .production, storeID: "grant_a"), accountID: account,
        productID: "pro", productKind: .nonRenewing, state: .active, ownership: .purchased,
        purchaseTimeMilliseconds: time(200), expiresTimeMilliseconds: time(210), storeTimeMilliseconds: time(200))

    static func view() -> EntitlementView {
        let view = EntitlementView()
        view.load([apple, google, grant], position: 3)
        return view
    }

    static func timeline(capability: String? = "pro", from: Int64 = -10, to: Int64 = 220) throws
        -> GetAccessTimelineResponse
    {
        try EntitlementMethods.timeline(
            GetAccessTimelineRequest(
                accountID: account, capability: capability, fromMilliseconds: time(from), toMilliseconds: time(to)),
            view: view(), policy: policy)
    }

    @Test("every kind in order, each with its answer, the subscription and the fact it rests on")
    func kinds() throws {
        let timeline = try #require(try Self.timeline().capabilities.first)
        #expect(timeline.capability == "pro" && !timeline.truncated)
        let rows = timeline.intervals.map { interval in
            [
                "\((interval.startMilliseconds - Self.t0) / Self.day)",
                "\((interval.endMilliseconds - Self.t0) / Self.day)", "\(interval.kind.map { "\($0)" } ?? "-")",
                interval.allowed ? "allowed" : "\(interval.reason.map { "\($0)" } ?? "-")",
                interval.grant?.key?.storeID ?? "-",
                interval.factStartMilliseconds.map { "\(($0 - Self.t0) / Self.day)" } ?? "-",
            ]
        }
        #expect(
            rows == [
                ["-10", "0", "gap", "no_grant", "2000001", "-"],
                ["0", "30", "trial", "allowed", "2000001", "0"],
                ["30", "60", "paid", "allowed", "2000001", "30"],
                ["60", "65", "grace", "allowed", "2000001", "60"],
                ["65", "95", "paid", "allowed", "2000001", "65"],
                ["95", "100", "gap", "expired", "2000001", "-"],
                ["100", "130", "paid", "allowed", "token", "100"],
                ["130", "140", "paused", "state_denies", "token", "130"],
                ["140", "150", "paid", "allowed", "token", "130"],
                ["150", "170", "revoked", "revoked", "token", "130"],
                // After a revoked last period Play's subscription stays revoked.
                ["170", "200", "revoked", "revoked", "token", "-"],
                ["200", "210", "granted", "allowed", "grant_a", "200"],
                ["210", "220", "revoked", "revoked", "token", "-"],
            ], "\(rows)")
        // Each interval's answer is CheckAccess's at every instant of it.
        let view = Self.view()
        for interval in timeline.intervals {
            for at in [interval.startMilliseconds, interval.endMilliseconds - 1] {
                let check = try EntitlementMethods.check(
                    CheckAccessRequest(accountID: Self.account, capability: "pro", atMilliseconds: at), view: view,
                    policy: Self.policy, now: at)
                #expect(check.allowed == interval.allowed && check.reason == interval.reason, "at \(at)")
                #expect(check.grant?.key == interval.grant?.key, "at \(at)")
            }
        }
    }

    @Test("without a capability: every capability the account's products name; an unknown account is one gap")
    func capabilities() throws {
        let all = try Self.timeline(capability: nil)
        #expect(all.capabilities.map(\.capability) == ["pro"])
        let nobody = try EntitlementMethods.timeline(
            GetAccessTimelineRequest(
                accountID: "nobody", capability: "pro", fromMilliseconds: Self.t0, toMilliseconds: Self.time(1)),
            view: Self.view(), policy: Self.policy)
        #expect(
            nobody.capabilities.first?.intervals
                == [
                    TimelineInterval(
                        kind: .gap, startMilliseconds: Self.t0, endMilliseconds: Self.time(1), reason: .noGrant)
                ])
    }

    @Test("a bad span or capability is refused, saying what is wrong")
    func refused() throws {
        // The status a caller gets for the request.
        func refusal(_ request: GetAccessTimelineRequest) -> RPCError? {
            do throws(EntitlementError) {
                _ = try EntitlementMethods.timeline(request, view: Self.view(), policy: Self.policy)
                return nil
            } catch {
                return error.rpcError
            }
        }
        #expect(
            refusal(
                GetAccessTimelineRequest(accountID: Self.account, fromMilliseconds: Self.t0, toMilliseconds: Self.t0))
                == RPCError(.invalidArgument, "to_ms \(Self.t0) must be after from_ms \(Self.t0)"))
        #expect(
            refusal(
                GetAccessTimelineRequest(
                    accountID: Self.account, fromMilliseconds: 0, toMilliseconds: Self.time(51 * 366)))
                == RPCError(.invalidArgument, "the span from from_ms to to_ms is longer than 50 years"))
        #expect(
            refusal(
                GetAccessTimelineRequest(
                    accountID: Self.account, capability: "gold", fromMilliseconds: Self.t0,
                    toMilliseconds: Self.time(1)))
                == RPCError(.notFound, "capability gold is not in the policy"))
    }

    @Test("a free trial and the paid months after it stay apart when periods are joined")
    func trialNotJoined() {
        let joined = Period.accessPeriods(Self.apple.periods, clipsAtNextStart: true)
        #expect(joined.map(\.periodID) == ["1", "2", "3"])
        #expect(joined.map(\.offerType) == [.freeTrial, nil, nil])
        var paid = Self.apple.periods
        paid[0].offerType = nil
        #expect(Period.accessPeriods(paid, clipsAtNextStart: true).map(\.periodID) == ["2", "3"])
    }
}
