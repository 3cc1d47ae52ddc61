import Model
import Testing
import Wire

@testable import EntitlementService

/// The view reads snapshot subscriptions in place (`WireSubscription`), by field number: these
/// hold those numbers to the schema (every field set, read back equal) and the reading to the
/// strictness of `Subscription(serialized:)`.
@Suite("WireSubscription")
struct WireSubscriptionTests {
    static let key = SubscriptionKey(store: .google, environment: .sandbox, storeID: "token.AO-J1Oz_x")

    /// A subscription with every field set to a value other than its default.
    static let full = Subscription(
        key: key, accountID: "7a1c2f0e-3b7d-4d7c-9a57-1b2c3d4e5f60", productID: "com.example.pro",
        basePlanID: "monthly", offerID: "intro", productKind: .autoRenewable, state: .gracePeriod,
        ownership: .familyShared, purchaseTimeMilliseconds: 1_700_000_000_001,
        originalPurchaseTimeMilliseconds: 1_690_000_000_000, expiresTimeMilliseconds: 1_702_592_000_002,
        graceExpiresTimeMilliseconds: 1_703_000_000_003, revokedTimeMilliseconds: 1_702_000_000_004,
        revocationReason: "1", autoRenew: true, autoRenewProductID: "com.example.basic", acknowledged: true,
        storeTimeMilliseconds: 1_700_000_000_005, verifiedTimeMilliseconds: 1_700_000_000_006,
        replacesStoreID: "older.token", replacedByStoreID: "newer.token", storeAccountRef: "ref-1",
        bundleOrPackage: "com.example.app", latestOrderID: "GPA.1234-5678",
        periods: [
            Period(
                periodID: "GPA.1", productID: "com.example.pro", basePlanID: "monthly",
                startMilliseconds: 1_697_000_000_000, endMilliseconds: 1_700_000_000_001, offerType: .freeTrial,
                revokedTimeMilliseconds: 1_699_000_000_000, revocationReason: "refund",
                signedTimeMilliseconds: 1_697_000_000_010, productKind: .autoRenewable, raw: "{}",
                stoppedTimeMilliseconds: 1_699_500_000_000),
            Period(
                periodID: "GPA.2", productID: "com.example.addon", startMilliseconds: 1_700_000_000_001,
                endMilliseconds: 1_702_592_000_002),
        ],
        offerType: .introductory, renewalOfferID: "winback", renewalOfferType: .promotional,
        expirationReason: .billingError, inBillingRetry: true, renewalTimeMilliseconds: 1_702_592_000_002,
        storefront: "DEU", priceMicros: 4_990_000, currency: "EUR", renewalOffProducts: ["com.example.addon", "x"],
        installmentsCommitted: 12, installmentsRemaining: 7,
        statusIntervals: [
            StatusInterval(
                state: .gracePeriod, startMilliseconds: 1_702_592_000_002, endMilliseconds: 1_703_000_000_003,
                shownTimeMilliseconds: 1_702_592_000_010, endedTimeMilliseconds: 1_703_000_000_003),
            StatusInterval(state: .paused, startMilliseconds: 1_703_000_000_003),
        ], autoResumeTimeMilliseconds: 1_705_000_000_000)

    static func read(_ bytes: [UInt8], maxRepeated: Int = 10_000) throws -> ReadBack {
        try bytes.withUnsafeBytes { raw in ReadBack(try WireSubscription(raw, maxRepeated: maxRepeated)) }
    }

    /// What a `WireSubscription` read, copied out of the bytes it points into.
    struct ReadBack: Equatable {
        var store: Store, environment: StoreEnvironment, storeID: String, accountID: String?
        var productID: String, basePlanID: String?, productKind: Int32, state: SubscriptionState?
        var times: [Int64], isReplaced: Bool, renewal: GrantRenewal, offProducts: [String]
        var periods: [[String?]]
        var lastPeriod: [String?]?
        var statuses: [WireSubscription.WireStatus]

        init(_ read: WireSubscription) {
            func text(_ t: WireSubscription.Text?) -> String? { t.map(WireSubscription.string) }
            func period(_ p: WireSubscription.WirePeriod) -> [String?] {
                [text(p.productID), text(p.basePlanID), "\(p.start)", "\(p.end)", "\(p.revoked)"]
            }
            store = read.store
            environment = read.environment
            storeID = WireSubscription.string(read.storeID)
            accountID = text(read.accountID)
            productID = WireSubscription.string(read.productID)
            basePlanID = text(read.basePlanID)
            productKind = read.productKind
            state = read.state
            times = [read.purchase, read.expires, read.grace, read.revoked]
            isReplaced = read.isReplaced
            renewal = read.renewal
            var off: [String] = []
            read.forEachRenewalOffProduct { off.append($0) }
            offProducts = off
            var all: [[String?]] = []
            read.forEachPeriod { all.append(period($0)) }
            periods = all
            #expect(read.periodCount == all.count)
            lastPeriod = read.lastPeriod.map(period)
            var statuses: [WireSubscription.WireStatus] = []
            read.forEachStatus { statuses.append($0) }
            #expect(read.statusCount == statuses.count)
            self.statuses = statuses
        }
    }

    @Test("every field the view keeps reads back as the schema encoded it")
    func everyField() throws {
        let read = try Self.read(Self.full.serialized())
        let s = Self.full
        #expect(read.store == .google && read.environment == .sandbox && read.storeID == "token.AO-J1Oz_x")
        #expect(read.accountID == s.accountID && read.productID == s.productID && read.basePlanID == "monthly")
        #expect(read.productKind == ProductKind.autoRenewable.rawValue && read.state == .gracePeriod)
        #expect(read.times == [1_700_000_000_001, 1_702_592_000_002, 1_703_000_000_003, 1_702_000_000_004])
        #expect(read.isReplaced)
        var renewal = GrantRenewal(s)
        renewal.graceExpiresTimeMilliseconds = nil  // the holding's own, not the profile's
        #expect(read.renewal == renewal)
        #expect(read.offProducts == ["com.example.addon", "x"])
        let first: [String?] = ["com.example.pro", "monthly", "1697000000000", "1700000000001", "1699000000000"]
        let second: [String?] = ["com.example.addon", nil, "1700000000001", "1702592000002", "0"]
        #expect(read.periods == [first, second])
        #expect(read.lastPeriod == second)
        #expect(
            read.statuses == [
                WireSubscription.WireStatus(state: .gracePeriod, start: 1_702_592_000_002, end: 1_703_000_000_003),
                WireSubscription.WireStatus(state: .paused, start: 1_703_000_000_003, end: 0),
            ])
    }

    @Test("absent fields read as absent: a key alone is a subscription with nothing else")
    func keyAlone() throws {
        let read = try Self.read(Subscription(key: Self.key).serialized())
        #expect(read.accountID == nil && read.productID == "" && read.basePlanID == nil && read.state == nil)
        #expect(read.times == [0, 0, 0, 0] && !read.isReplaced && read.renewal == GrantRenewal())
        #expect(read.periods.isEmpty && read.lastPeriod == nil && read.offProducts.isEmpty)
    }

    /// Bytes of a message built field by field.
    typealias Bytes = ProtoWireWriter

    static let keyBytes = key.serialized()

    static func refusal(_ build: (inout Bytes) -> Void, maxRepeated: Int = 10_000) -> RPCError? {
        var message = Bytes()
        build(&message)
        do {
            _ = try read(message.bytes, maxRepeated: maxRepeated)
            return nil
        } catch {
            return (error as? any RPCErrorConvertible)?.rpcError
        }
    }

    @Test("what Subscription(serialized:) refuses, the view refuses, saying what is wrong")
    func refusals() {
        let cases: [(String, StatusCode, (inout Bytes) -> Void)] = [
            ("Subscription.key is missing", .invalidArgument, { $0.field(3, bytes: Array("p".utf8)) }),
            (
                "Subscription.key.store is unspecified", .invalidArgument,
                { m in
                    var key = Bytes()
                    key.field(2, varint: 1)
                    key.field(3, bytes: Array("1".utf8))
                    m.field(1, bytes: key.bytes)
                }
            ),
            (
                "Subscription.key.environment is unknown value 9", .invalidArgument,
                { m in
                    var key = Bytes()
                    key.field(1, varint: 1)
                    key.field(2, varint: 9)
                    m.field(1, bytes: key.bytes)
                }
            ),
            (
                "Subscription.state has unknown value 99", .invalidArgument,
                {
                    $0.field(1, bytes: Self.keyBytes)
                    $0.field(7, varint: 99)
                }
            ),
            (
                "Subscription field 3 has the wrong wire type", .invalidArgument,
                {
                    $0.field(1, bytes: Self.keyBytes)
                    $0.field(3, varint: 1)
                }
            ),
            (
                "Subscription field 23 has the wrong wire type", .invalidArgument,
                {
                    $0.field(1, bytes: Self.keyBytes)
                    $0.field(23, varint: 1)
                }
            ),
            (
                "Subscription.account_id is not valid UTF-8", .invalidArgument,
                {
                    $0.field(1, bytes: Self.keyBytes)
                    $0.field(2, bytes: [0x61, 0xFF])
                }
            ),
            (
                "Subscription.product_id holds a NUL byte", .invalidArgument,
                {
                    $0.field(1, bytes: Self.keyBytes)
                    $0.field(3, bytes: [0x61, 0x00, 0x62])
                }
            ),
            (
                "a Subscription is not well-formed protobuf", .invalidArgument,
                {
                    $0.field(1, bytes: Self.keyBytes)
                    $0.append(raw: [0x1A, 0x05, 0x61])  // product_id declares 5 bytes, 1 follows
                }
            ),
            (
                "a Period is not well-formed protobuf", .invalidArgument,
                {
                    $0.field(1, bytes: Self.keyBytes)
                    $0.field(25, bytes: [0x20])  // start_ms without its value
                }
            ),
        ]
        for (message, code, build) in cases {
            let error = Self.refusal(build)
            #expect(error?.code == code, "\(message)")
            #expect(error?.message == message)
        }
        let periods = Self.refusal(
            { m in
                m.field(1, bytes: Self.keyBytes)
                for _ in 0..<3 { m.field(25, bytes: []) }
            }, maxRepeated: 2)
        #expect(periods?.code == .resourceExhausted)
        #expect(periods?.message == "Subscription.periods: more than 2 elements")
    }

    @Test("a key given twice: the last one stands whole, as protobuf-c reads it")
    func keyTwice() throws {
        func key(_ build: (inout Bytes) -> Void) -> [UInt8] {
            var key = Bytes()
            build(&key)
            return key.bytes
        }
        var message = Bytes()
        message.field(
            1,
            bytes: key {
                $0.field(1, varint: 1)
                $0.field(2, varint: 2)
                $0.field(3, bytes: Array("a".utf8))
            })
        message.field(
            1,
            bytes: key {
                $0.field(1, varint: 2)
                $0.field(2, varint: 1)
                $0.field(3, bytes: Array("b".utf8))
            })
        let read = try Self.read(message.bytes)
        #expect(read.store == .google && read.environment == .production && read.storeID == "b")
        #expect(
            try Subscription(serialized: message.bytes).key
                == SubscriptionKey(store: .google, environment: .production, storeID: "b"))
        // A last key without a store is refused by both, whatever came before it.
        message.field(1, bytes: key { $0.field(3, bytes: Array("c".utf8)) })
        #expect(Self.refusal { $0.append(raw: message.bytes) }?.message == "Subscription.key.store is unspecified")
        #expect(throws: RPCError.self) { try Subscription(serialized: message.bytes) }
    }

    @Test("fields this version does not know are skipped, whatever their wire type")
    func unknownFields() throws {
        var message = Bytes()
        message.field(1, bytes: Self.keyBytes)
        message.field(99, varint: 7)
        message.field(100, bytes: [1, 2, 3])
        message.field(3, bytes: Array("com.example.pro".utf8))
        #expect(try Self.read(message.bytes).productID == "com.example.pro")
    }

    @Test("a snapshot chunk read in place loads what the decoded chunk loads, and says where it ends")
    func chunk() throws {
        let other = Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: "2000000123456789"),
            accountID: "user-42", productID: "com.example.pro", productKind: .autoRenewable, state: .active,
            purchaseTimeMilliseconds: 1_700_000_000_000, expiresTimeMilliseconds: 1_702_592_000_000, autoRenew: true)
        let chunk = SnapshotChunk(
            subscriptions: [Self.full, other],
            links: [AccountLink(accountID: "user-42", key: other.key)], complete: true, position: 77,
            positionCommittedMilliseconds: 1_790_000_000_123)
        var builder = EntitlementView.Builder()
        let summary = try chunk.serialized().withUnsafeBytes { try builder.add(chunk: $0) }
        #expect(
            summary
                == EntitlementView.Builder.ChunkSummary(
                    subscriptions: 2, complete: true, position: 77, positionCommitted: 1_790_000_000_123))
        let inPlace = EntitlementView()
        inPlace.install(builder, position: summary.position)
        let decoded = EntitlementView()
        decoded.load(chunk.subscriptions, position: 77)
        #expect(inPlace.counts == decoded.counts)
        #expect(inPlace.counts == (accounts: 2, subscriptions: 2))
        // What each view holds for each account, field by field, not only how many.
        for account in [Self.full.accountID!, "user-42"] {
            #expect(inPlace.subscriptions(of: account) == decoded.subscriptions(of: account), "\(account)")
            #expect(!inPlace.subscriptions(of: account).isEmpty)
        }
        #expect(inPlace.position == 77)
        #expect(inPlace.renewalProfileCount == decoded.renewalProfileCount)
    }

    @Test("a chunk that is not one is refused, naming the fault")
    func badChunks() {
        func refusal(_ bytes: [UInt8], budget: DecodeBudget = .standard) -> RPCError? {
            var builder = EntitlementView.Builder()
            do {
                _ = try bytes.withUnsafeBytes { raw in try builder.add(chunk: raw, budget: budget) }
                return nil
            } catch {
                return (error as? any RPCErrorConvertible)?.rpcError
            }
        }
        #expect(refusal([0x18, 0x01, 0x20])?.message == "a SnapshotChunk is not well-formed protobuf")
        #expect(refusal([0x1A, 0x00])?.message == "SnapshotChunk field 3 has the wrong wire type")
        var unknown = Bytes()
        for _ in 0..<3 { unknown.field(9, varint: 1) }
        let tooManyUnknown = refusal(unknown.bytes, budget: DecodeBudget(maxUnknownFields: 2))
        #expect(tooManyUnknown?.code == .resourceExhausted)
        #expect(tooManyUnknown?.message == "SnapshotChunk: more than 2 fields this schema does not know")
        var many = Bytes()
        for _ in 0..<3 { many.field(1, bytes: Subscription(key: Self.key).serialized()) }
        let tooMany = refusal(many.bytes, budget: DecodeBudget(maxRepeated: 2))
        #expect(tooMany?.message == "SnapshotChunk.subscriptions: more than 2 elements")
    }
}
