import Foundation
import Model
import Testing
import Wire

@testable import EntitlementService

@Suite("View checkpoints")
struct ViewCheckpointTests {
    static let policy = try! ProductPolicy(
        parsing: """
            capability pro
              apple com.example.pro.monthly
              google pro_sub
            capability lifetime
              apple com.example.lifetime
              apple season.pass duration 90d
            capability extras
              google extras_addon
            """)
    static let now: Int64 = 1_790_000_000_000
    static let day: Int64 = 86_400_000

    /// A view holding every kind of record: UUID and text account ids, numeric and token store
    /// ids, chains of earlier periods (a Google add-on beside its base plan, an Apple upgrade),
    /// renewal profiles with an add-on's renewal off and an app id, a non-renewing product, an
    /// account forgotten after a transfer, and texts spread over more than one arena chunk.
    static func populated() -> EntitlementView {
        let view = EntitlementView()
        var subscriptions: [Subscription] = []
        for index in 0..<3000 {
            let account =
                index % 3 == 0
                ? String(format: "%08x-0000-4000-8000-%012x", index, index * 7)
                : "user-\(index)-" + String(repeating: "x", count: index % 40)
            if index % 2 == 0 {
                var subscription = Subscription(
                    key: SubscriptionKey(store: .apple, environment: .production, storeID: "\(2_000_000_000 + index)"),
                    accountID: account, productID: index % 10 == 0 ? "season.pass" : "com.example.pro.monthly",
                    productKind: index % 10 == 0 ? .nonRenewing : .autoRenewable, state: .active,
                    ownership: index % 4 == 0 ? .familyShared : .purchased,
                    purchaseTimeMilliseconds: now - 40 * day, expiresTimeMilliseconds: now + Int64(index % 9 - 4) * day,
                    autoRenew: index % 3 != 0, storeTimeMilliseconds: now, bundleOrPackage: "com.example.app",
                    renewalTimeMilliseconds: now + Int64(index % 9 - 4) * day, storefront: "USA",
                    priceMicros: 4_990_000, currency: "USD")
                if index % 10 != 0 {
                    subscription.periods = [
                        Period(
                            periodID: "a\(index)", productID: "com.example.lifetime", startMilliseconds: now - 40 * day,
                            endMilliseconds: now - 20 * day, productKind: .autoRenewable),
                        Period(
                            periodID: "b\(index)", productID: "com.example.pro.monthly",
                            startMilliseconds: now - 20 * day, endMilliseconds: now + Int64(index % 9 - 4) * day,
                            productKind: .autoRenewable),
                    ]
                }
                subscriptions.append(subscription)
            } else {
                let token = "tok\(index)." + String(repeating: "T", count: 150)
                var subscription = Subscription(
                    key: SubscriptionKey(store: .google, environment: .production, storeID: token), accountID: account,
                    productID: "pro_sub", basePlanID: "monthly", productKind: .autoRenewable,
                    state: index % 5 == 0 ? .gracePeriod : .active, purchaseTimeMilliseconds: now - 10 * day,
                    expiresTimeMilliseconds: now + Int64(index % 7) * day, autoRenew: true, storeTimeMilliseconds: now,
                    bundleOrPackage: "com.example.android", storefront: "DE",
                    renewalOffProducts: index % 3 == 0 ? ["extras_addon"] : [])
                subscription.periods = [
                    Period(
                        periodID: "g\(index)", productID: "pro_sub", basePlanID: "monthly",
                        startMilliseconds: now - 10 * day, endMilliseconds: now + Int64(index % 7) * day,
                        productKind: .autoRenewable),
                    Period(
                        periodID: "x\(index)", productID: "extras_addon", basePlanID: "addon",
                        startMilliseconds: now - 5 * day, endMilliseconds: now + 2 * day, productKind: .autoRenewable),
                ]
                // Some paused a while in the past: the answers inside the pause come from it.
                if index % 7 == 1 {
                    subscription.statusIntervals = [
                        StatusInterval(
                            state: .paused, startMilliseconds: now - 31 * day, endMilliseconds: now - 29 * day),
                        StatusInterval(state: .accountHold, startMilliseconds: now + 4 * day),
                    ]
                }
                subscriptions.append(subscription)
            }
        }
        view.load(subscriptions, position: 40)
        // A transfer that empties an account (forgotten), and a change after the snapshot.
        var moved = subscriptions[1]
        moved.accountID = "user-2999-" + String(repeating: "x", count: 2999 % 40)
        #expect(view.apply(position: 41, subscription: moved, committed: now + 1))
        return view
    }

    static func accounts() -> [String] {
        (0..<3000).map { index in
            index % 3 == 0
                ? String(format: "%08x-0000-4000-8000-%012x", index, index * 7)
                : "user-\(index)-" + String(repeating: "x", count: index % 40)
        } + ["nobody", "user-1-x"]
    }

    /// Every answer the view gives for every account, at three instants.
    static func answers(_ view: EntitlementView) throws -> [String] {
        var answers: [String] = []
        for account in accounts() {
            for at in [now - 30 * day, now, now + 5 * day] {
                for capability in ["pro", "lifetime", "extras"] {
                    let check = try EntitlementMethods.check(
                        CheckAccessRequest(accountID: account, capability: capability, atMilliseconds: at), view: view,
                        policy: policy, now: now)
                    answers.append("\(account) \(capability) \(at) \(check)")
                }
                let listed = try EntitlementMethods.list(
                    ListEntitlementsRequest(accountID: account, atMilliseconds: at), view: view, policy: policy,
                    now: now)
                let active = try EntitlementMethods.activeSubscriptions(
                    GetActiveSubscriptionsRequest(accountID: account, atMilliseconds: at), view: view, policy: policy,
                    now: now)
                answers.append("\(account) \(at) \(listed) \(active)")
            }
            answers.append("\(account) \(view.subscriptions(of: account))")
        }
        return answers
    }

    static func temporaryPath() -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("checkpoint-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent("view.checkpoint").path
    }

    @Test("a checkpoint read back answers every check, list and subscriber view as the view it was written from")
    func roundTrip() throws {
        let view = Self.populated()
        let path = Self.temporaryPath()
        let checkpoint = ViewCheckpoint(path: path)
        let written = try #require(try checkpoint.write(view, policyVersion: "7", now: Self.now))
        #expect(written.position == 41)
        #expect(written.accounts == view.counts.accounts)
        #expect(written.subscriptions == 3000)
        #expect(written.bytes == (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
        // No temporary file is left beside it.
        let folder = (path as NSString).deletingLastPathComponent
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["view.checkpoint"])

        let loaded = EntitlementView()
        let summary = try #require(try checkpoint.load(into: loaded))
        #expect(summary == written)
        #expect(loaded.position == 41)
        #expect(loaded.counts == view.counts)
        #expect(loaded.renewalProfileCount == view.renewalProfileCount)
        #expect(try Self.answers(loaded) == Self.answers(view))
        #expect(
            loaded.undatedNonRenewingProducts(policy: Self.policy)
                == view.undatedNonRenewingProducts(policy: Self.policy))
        // The indexes keep working after the load: the same changes give the same answers
        // (new accounts and subscriptions are hashed with the checkpoint's seed).
        for (position, index) in [(42, 5000), (43, 5001), (44, 7)] {
            let change = Subscription(
                key: SubscriptionKey(store: .google, environment: .production, storeID: "new-\(index)"),
                accountID: "user-\(index)", productID: "pro_sub", basePlanID: "monthly", productKind: .autoRenewable,
                state: .active, purchaseTimeMilliseconds: Self.now - Self.day,
                expiresTimeMilliseconds: Self.now + Self.day, storeTimeMilliseconds: Self.now)
            #expect(view.apply(position: UInt64(position), subscription: change))
            #expect(loaded.apply(position: UInt64(position), subscription: change))
        }
        #expect(try Self.answers(loaded) == Self.answers(view))
        #expect(
            loaded.holder(of: SubscriptionKey(store: .google, environment: .production, storeID: "new-7")) == "user-7")
    }

    @Test("a view before its first snapshot writes nothing; a missing checkpoint loads nothing")
    func nothing() throws {
        let path = Self.temporaryPath()
        let checkpoint = ViewCheckpoint(path: path)
        #expect(try checkpoint.write(EntitlementView(), policyVersion: "", now: Self.now) == nil)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: (path as NSString).deletingLastPathComponent).isEmpty)
        let view = EntitlementView()
        #expect(try checkpoint.load(into: view) == nil)
        #expect(view.position == nil)
    }

    @Test("a damaged, truncated, extended or foreign checkpoint is refused whole and changes nothing")
    func damage() throws {
        let view = Self.populated()
        let path = Self.temporaryPath()
        let checkpoint = ViewCheckpoint(path: path)
        try #require(try checkpoint.write(view, policyVersion: "7", now: Self.now) != nil)
        let good = try Data(contentsOf: URL(fileURLWithPath: path))

        func refused(_ bytes: Data, _ expected: String) throws {
            try bytes.write(to: URL(fileURLWithPath: path))
            let target = EntitlementView()
            do {
                _ = try checkpoint.load(into: target)
                Issue.record("a bad checkpoint loaded (\(expected))")
            } catch {
                #expect(expected.isEmpty || error.description.contains(expected), "\(error)")
            }
            #expect(target.position == nil)
            #expect(target.counts == (0, 0))
        }
        // One bit flipped anywhere (header, a record, an index slot, a text, the checksum).
        for offset in [9, 40, 120, good.count / 3, good.count / 2, good.count - 200, good.count - 1] {
            var flipped = good
            flipped[offset] ^= 0x10
            try refused(flipped, offset < 8 ? "not a view checkpoint" : "")
        }
        var middle = good
        middle[good.count / 2] ^= 0x01
        try refused(middle, "checksum does not match")
        try refused(good.prefix(good.count - 3), "ends early")
        try refused(good.prefix(good.count / 2), "ends early")
        try refused(good + Data([0]), "bytes follow the checksum")
        var foreign = good
        foreign[0] ^= 0xFF
        try refused(foreign, "is not a view checkpoint")
        var version = good
        version[8] = 9
        try refused(version, "has format 9")
        try refused(Data(), "ends early")
        // The good one still loads.
        try good.write(to: URL(fileURLWithPath: path))
        let target = EntitlementView()
        #expect(try checkpoint.load(into: target)?.position == 41)
    }

    @Test("the change at the view's position confirms the feed: learned after a snapshot, checked after a checkpoint")
    func confirm() throws {
        let view = EntitlementView()
        view.load([], position: 5)
        #expect(view.confirm(position: 4, committed: 1))  // not the view's position: not judged
        #expect(view.confirm(position: 5, committed: 500))  // learned
        #expect(view.confirm(position: 5, committed: 500))
        #expect(!view.confirm(position: 5, committed: 501))
        #expect(view.apply(position: 6, subscription: nil, committed: 600))
        #expect(!view.confirm(position: 6, committed: 599))
        let path = Self.temporaryPath()
        try ViewCheckpoint(path: path).write(view, policyVersion: "", now: Self.now)
        let loaded = EntitlementView()
        _ = try ViewCheckpoint(path: path).load(into: loaded)
        #expect(loaded.confirm(position: 6, committed: 600))
        #expect(!loaded.confirm(position: 6, committed: 1))
        loaded.forgetPosition()
        #expect(loaded.position == nil)
    }
}
