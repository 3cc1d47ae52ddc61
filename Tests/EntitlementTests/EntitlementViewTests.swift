import Foundation
import Model
import Testing
import Wire

@testable import EntitlementService

@Suite("Entitlement view and checks")
struct EntitlementViewTests {
    static let policy = try! ProductPolicy(
        parsing: """
            capability pro
              apple com.example.pro.monthly
              google pro_sub
            capability lifetime
              apple com.example.lifetime
            """)
    static let now: Int64 = 1_790_000_000_000
    static let day: Int64 = 86_400_000
    static let alice = "7a1c2f0e-3b7d-4d7c-9a57-1b2c3d4e5f60"

    static func apple(
        _ id: String, account: String?, product: String = "com.example.pro.monthly", expires: Int64,
        state: SubscriptionState = .active
    ) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: .apple, environment: .production, storeID: id), accountID: account,
            productID: product,
            productKind: .autoRenewable, state: state, ownership: .purchased, purchaseTimeMilliseconds: now - 30 * day,
            expiresTimeMilliseconds: expires, autoRenew: true, storeTimeMilliseconds: now)
    }

    static func google(_ token: String, account: String?, expires: Int64) -> Subscription {
        Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: token), accountID: account,
            productID: "pro_sub", basePlanID: "monthly", productKind: .autoRenewable, state: .cancelled,
            purchaseTimeMilliseconds: now - 10 * day, expiresTimeMilliseconds: expires, storeTimeMilliseconds: now)
    }

    static func check(_ view: EntitlementView, _ account: String, _ capability: String = "pro", at: Int64 = now) throws
        -> CheckAccessResponse
    {
        try EntitlementMethods.check(
            CheckAccessRequest(accountID: account, capability: capability, atMilliseconds: at), view: view,
            policy: policy, now: now)
    }

    @Test("compact keys keep ids exactly: lowercase UUIDs and digit store ids are packed, everything else stays text")
    func compactKeys() throws {
        #expect(AccountKey(Self.alice) == .uuid(0x7a1c_2f0e_3b7d_4d7c, 0x9a57_1b2c_3d4e_5f60))
        #expect(AccountKey.text(high: 0x7a1c_2f0e_3b7d_4d7c, low: 0x9a57_1b2c_3d4e_5f60) == Self.alice)
        #expect(AccountKey(Self.alice.uppercased()) == .text(Self.alice.uppercased()))
        #expect(AccountKey("user-42") == .text("user-42"))
        func number(_ id: String) -> UInt64? {
            withUTF8Bytes(id) { StoreKey(.apple, .sandbox, $0).number }
        }
        #expect(number("2000000123456789") == 2_000_000_123_456_789)
        #expect(number("0123") == nil)
        #expect(number("abc.AO-J1Oz_x") == nil)
        #expect(number("9999999999999999999") == 9_999_999_999_999_999_999)
        #expect(number("18446744073709551615") == nil)  // 20 digits stay text
        #expect(number("") == nil)
        let numeric = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000123456789")
        let leadingZero = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "0123")
        let token = SubscriptionKey(store: .google, environment: .production, storeID: "abc.AO-J1Oz_x")
        // The same number in another environment, and a 200-byte token, are other keys.
        let production = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000123456789")
        let long = SubscriptionKey(
            store: .google, environment: .production, storeID: String(repeating: "t", count: 200))
        let accounts = [Self.alice, Self.alice.uppercased(), "user-42", "u", "user-43"]
        let keys = [numeric, leadingZero, token, production, long]
        let view = EntitlementView()
        view.load(
            zip(keys, accounts).map { key, account in
                var subscription = Self.apple(key.storeID, account: account, expires: Self.now + Self.day)
                subscription.key = key
                return subscription
            }, position: 1)
        #expect(view.counts == (5, 5))
        for (key, account) in zip(keys, accounts) {
            #expect(view.subscriptions(of: account).map(\.key) == [key])
        }
        #expect(view.subscriptions(of: "user-4").isEmpty)
        // The wire has no empty account id (proto3 writes it as absent): such a subscription is
        // held by nobody.
        var unowned = Self.apple("2000000999", account: "", expires: Self.now + Self.day)
        unowned.key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000999")
        view.apply(position: 2, subscription: unowned)
        #expect(view.counts == (5, 5))
        #expect(view.subscriptions(of: "").isEmpty)
    }

    @Test("the view's hash indexes find every one of 100,000 accounts and keys as they grow, and no other")
    func manyKeys() throws {
        let view = EntitlementView()
        var builder = EntitlementView.Builder()
        var expected: [(String, SubscriptionKey)] = []
        for index in 0..<100_000 {
            let account = index % 3 == 0 ? "acct-\(index)" : UUID(uuid: Self.uuidBytes(index)).uuidString.lowercased()
            let key =
                index % 2 == 0
                ? SubscriptionKey(store: .apple, environment: .production, storeID: String(1_000_000_000 + index))
                : SubscriptionKey(store: .google, environment: .production, storeID: "token.\(index).AO-J1O")
            var subscription = Self.apple(key.storeID, account: account, expires: Self.now + Self.day)
            subscription.key = key
            builder.add([subscription])
            expected.append((account, key))
        }
        view.install(builder, position: 1)
        #expect(view.counts == (100_000, 100_000))
        for (index, (account, key)) in expected.enumerated() where index % 97 == 0 {
            #expect(view.subscriptions(of: account).map(\.key) == [key])
        }
        #expect(view.subscriptions(of: "acct-1").isEmpty)
    }

    static func uuidBytes(_ index: Int) -> uuid_t {
        let value = UInt64(index) &* 0x9E37_79B9_7F4A_7C15
        return (
            UInt8(value >> 56 & 0xFF), UInt8(value >> 48 & 0xFF), UInt8(value >> 40 & 0xFF), UInt8(value >> 32 & 0xFF),
            UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), 0x4a, UInt8(index & 0xFF), 0x9a, 0x57, 0x1b, 0x2c,
            0x3d, 0x4e, 0x5f, UInt8(index >> 8 & 0xFF)
        )
    }

    @Test("an account with an Apple and a Google subscription keeps the capability until the later end")
    func unionAcrossStores() throws {
        let view = EntitlementView()
        view.load(
            [
                Self.apple("2000000001", account: Self.alice, expires: Self.now + 5 * Self.day),
                Self.google("tok-1", account: Self.alice, expires: Self.now + 9 * Self.day),
            ], position: 2)
        let answer = try Self.check(view, Self.alice)
        #expect(answer.allowed && answer.untilMilliseconds == Self.now + 9 * Self.day && answer.reason == .granted)
        #expect(answer.grant?.key?.storeID == "tok-1" && answer.grant?.basePlanID == "monthly")
        let later = try Self.check(view, Self.alice, at: Self.now + 10 * Self.day)
        #expect(!later.allowed && later.reason == .expired)
        #expect(try Self.check(view, "someone-else").reason == .noGrant)
        #expect(try Self.check(view, Self.alice, "gold").reason == .unknownCapability)
        #expect(view.counts == (1, 2))
    }

    @Test("of two denied subscriptions the answer is the nearest miss: billing retry outranks an expired period")
    func denialRankingAcrossStores() throws {
        let view = EntitlementView()
        view.load(
            [
                Self.apple("2000000001", account: Self.alice, expires: Self.now - Self.day),
                Self.apple(
                    "2000000002", account: Self.alice, expires: Self.now + Self.day, state: .billingRetry),
            ], position: 2)
        let answer = try Self.check(view, Self.alice)
        #expect(!answer.allowed && answer.reason == .stateDenies && answer.grant?.key?.storeID == "2000000002")
    }

    @Test(
        "changes apply in feed order: a transfer moves access, an old position changes nothing, an unlinked one is dropped"
    )
    func changes() throws {
        let view = EntitlementView()
        #expect(
            !view.apply(
                position: 1,
                subscription: Self.apple("1", account: "a", expires: Self.now + Self.day)))
        view.load([Self.apple("2000000001", account: "carol", expires: Self.now + Self.day)], position: 10)
        #expect(try Self.check(view, "carol").allowed)
        #expect(
            view.apply(
                position: 11,
                subscription: Self.apple("2000000001", account: "dave", expires: Self.now + Self.day)))
        #expect(try !Self.check(view, "carol").allowed)
        #expect(try Self.check(view, "dave").allowed)
        #expect(
            !view.apply(
                position: 11,
                subscription: Self.apple("2000000001", account: "carol", expires: Self.now + Self.day)))
        #expect(try Self.check(view, "dave").allowed)
        #expect(
            view.apply(
                position: 12,
                subscription: Self.apple("2000000001", account: nil, expires: Self.now + Self.day)))
        #expect(view.counts == (0, 0))
        #expect(view.position == 12)
    }

    @Test("a refund ends access from its time, also for an instant asked about after it")
    func revocation() throws {
        let view = EntitlementView()
        var refunded = Self.apple("2000000002", account: "erin", expires: Self.now + 20 * Self.day, state: .revoked)
        refunded.revokedTimeMilliseconds = Self.now - Self.day
        view.load([refunded], position: 1)
        #expect(try Self.check(view, "erin").reason == .revoked)
        let before = try Self.check(view, "erin", at: Self.now - 2 * Self.day)
        #expect(before.allowed && before.untilMilliseconds == Self.now - Self.day)
    }

    @Test("ListEntitlements lists what is allowed now, with every grant; the lifetime unlock has no end")
    func list() throws {
        let view = EntitlementView()
        var lifetime = Self.apple("3000000001", account: "frank", product: "com.example.lifetime", expires: 0)
        lifetime.productKind = .nonConsumable
        lifetime.expiresTimeMilliseconds = nil
        view.load([Self.apple("2000000003", account: "frank", expires: Self.now + Self.day), lifetime], position: 2)
        let listed = try EntitlementMethods.list(
            ListEntitlementsRequest(accountID: "frank"), view: view, policy: Self.policy, now: Self.now)
        #expect(listed.entitlements.map(\.capability) == ["lifetime", "pro"])
        #expect(listed.entitlements[0].untilMilliseconds == nil)
        #expect(listed.entitlements[1].untilMilliseconds == Self.now + Self.day)
        #expect(listed.entitlements[1].grants.map(\.key?.storeID) == ["2000000003"])
    }

    @Test("CheckAccess from bytes to bytes answers exactly what the Swift path answers, errors included")
    func packedMatchesSwift() throws {
        let view = EntitlementView()
        var refunded = Self.apple("2000000002", account: "erin", expires: Self.now + 20 * Self.day, state: .revoked)
        refunded.revokedTimeMilliseconds = Self.now - Self.day
        var lifetime = Self.apple("3000000001", account: "frank", product: "com.example.lifetime", expires: 0)
        lifetime.productKind = .nonConsumable
        lifetime.expiresTimeMilliseconds = nil
        view.load(
            [
                Self.apple("2000000001", account: Self.alice, expires: Self.now + 5 * Self.day),
                Self.google("tok-1", account: Self.alice, expires: Self.now + 9 * Self.day),
                refunded, lifetime,
                Self.apple("18446744073709551615", account: "max", expires: Self.now + Self.day),
                Self.apple("4000000001", account: "gina", expires: Self.now + Self.day, state: .billingRetry),
            ], position: 6)
        let requests = [
            CheckAccessRequest(accountID: Self.alice, capability: "pro"),
            CheckAccessRequest(accountID: Self.alice, capability: "pro", atMilliseconds: Self.now + 10 * Self.day),
            CheckAccessRequest(accountID: Self.alice, capability: "pro", atMilliseconds: Self.now - 40 * Self.day),
            CheckAccessRequest(accountID: Self.alice, capability: "gold"),
            CheckAccessRequest(accountID: Self.alice, capability: "lifetime"),
            CheckAccessRequest(accountID: "erin", capability: "pro"),
            CheckAccessRequest(accountID: "erin", capability: "pro", atMilliseconds: Self.now - 2 * Self.day),
            CheckAccessRequest(accountID: "frank", capability: "lifetime"),
            CheckAccessRequest(accountID: "max", capability: "pro"),
            CheckAccessRequest(accountID: "gina", capability: "pro"),
            CheckAccessRequest(accountID: "nobody", capability: "pro"),
            CheckAccessRequest(accountID: "", capability: "pro"),
            CheckAccessRequest(accountID: String(repeating: "a", count: 257), capability: "pro"),
            CheckAccessRequest(accountID: "erin", capability: String(repeating: "c", count: 65)),
            CheckAccessRequest(accountID: "érin", capability: "pro"),
        ]
        func answers(_ bytes: [UInt8]) -> Result<[UInt8], RPCError> {
            Result { () throws(RPCError) -> [UInt8] in
                do {
                    var output: [UInt8] = [0xAA]
                    _ = try bytes.withUnsafeBytes {
                        try EntitlementMethods.checkPacked(
                            $0, into: &output, view: view, policy: Self.policy, now: { Self.now })
                    }
                    #expect(output.first == 0xAA)  // appended, not overwritten
                    return Array(output.dropFirst())
                } catch let error as any RPCErrorConvertible {
                    throw error.rpcError
                } catch {
                    throw RPCError(.internal, "\(error)")
                }
            }
        }
        for request in requests {
            let swift = Result { () throws(RPCError) -> [UInt8] in
                do {
                    return try EntitlementMethods.check(request, view: view, policy: Self.policy, now: Self.now)
                        .serialized()
                } catch let error as any RPCErrorConvertible {
                    throw error.rpcError
                } catch {
                    throw RPCError(.internal, "\(error)")
                }
            }
            #expect(answers(request.serialized()) == swift, "\(request)")
        }
        #expect(
            try CheckAccessResponse(serialized: answers(requests[8].serialized()).get()).grant?.key?.storeID
                == "18446744073709551615")
        // Not UTF-8 (field 1, two bytes 0xFF 0xFE): the Swift decoder says the same; then not
        // protobuf at all.
        let notUTF8: [UInt8] = [0x0A, 0x02, 0xFF, 0xFE, 0x12, 0x03, 0x70, 0x72, 0x6F]
        #expect(throws: answers(notUTF8).failure!) { try CheckAccessRequest(serialized: notUTF8) }
        #expect(
            answers(notUTF8)
                == .failure(
                    RPCError(
                        .invalidArgument,
                        "payload is not a valid subscriptions.entitlement.v1.CheckAccessRequest: account_id is not valid UTF-8"
                    )))
        if case .failure(let error) = answers([0x0A, 0x09, 0x41]) {
            #expect(error.code == .invalidArgument)
        } else {
            Issue.record("a truncated field was accepted")
        }
    }

    @Test(
        "a UUID id is read as its two halves exactly when it is 8-4-4-4-12 lowercase hex; any other byte anywhere refuses it"
    )
    func uuidHalves() throws {
        func reference(_ bytes: [UInt8]) -> (UInt64, UInt64)? {
            guard bytes.count == 36 else { return nil }
            var digits: [UInt64] = []
            for (index, byte) in bytes.enumerated() {
                if [8, 13, 18, 23].contains(index) {
                    guard byte == UInt8(ascii: "-") else { return nil }
                } else if let value = "0123456789abcdef".utf8.firstIndex(of: byte) {
                    digits.append(
                        UInt64("0123456789abcdef".utf8.distance(from: "0123456789abcdef".utf8.startIndex, to: value)))
                } else {
                    return nil
                }
            }
            return (digits[0..<16].reduce(0) { $0 << 4 | $1 }, digits[16..<32].reduce(0) { $0 << 4 | $1 })
        }
        func parsed(_ bytes: [UInt8]) -> (UInt64, UInt64)? {
            bytes.withUnsafeBufferPointer { AccountKey.lowercaseUUID($0) }
        }
        let base = Array(Self.alice.utf8)
        #expect(parsed(base)! == (0x7a1c_2f0e_3b7d_4d7c, 0x9a57_1b2c_3d4e_5f60))
        for position in 0..<36 {
            for byte in 0...255 {
                var bytes = base
                bytes[position] = UInt8(byte)
                let expected = reference(bytes)
                let actual = parsed(bytes)
                #expect(actual?.0 == expected?.0 && actual?.1 == expected?.1, "byte \(byte) at \(position)")
            }
        }
        for _ in 0..<1000 {
            let id = Array(UUID().uuidString.lowercased().utf8)
            #expect(parsed(id)! == reference(id)!)
        }
        #expect(parsed(Array(Self.alice.uppercased().utf8)) == nil)
        #expect(parsed(base.dropLast().map { $0 }) == nil)
        #expect(parsed(base + [0x30]) == nil)
    }

    @Test("checks follow a new policy on the same view: a product that stops granting a capability stops at once")
    func followsPolicyChange() throws {
        let view = EntitlementView()
        view.load([Self.apple("2000000001", account: Self.alice, expires: Self.now + 5 * Self.day)], position: 1)
        let moved = try ProductPolicy(
            parsing: """
                capability pro
                  apple com.example.other
                capability gold
                  apple com.example.pro.monthly
                """)
        func check(_ capability: String, _ policy: ProductPolicy) throws -> CheckAccessResponse {
            try EntitlementMethods.check(
                CheckAccessRequest(accountID: Self.alice, capability: capability), view: view, policy: policy,
                now: Self.now)
        }
        #expect(try check("pro", Self.policy).allowed)
        #expect(try check("pro", moved).reason == .noGrant)
        #expect(try check("gold", moved).allowed)
        // And back.
        #expect(try check("pro", Self.policy).allowed)
    }

    @Test("prefetching for a batch of requests, readable or not, changes no answer")
    func prefetchChangesNothing() throws {
        let view = EntitlementView()
        view.load(
            [
                Self.apple("2000000001", account: Self.alice, expires: Self.now + 5 * Self.day),
                Self.google("tok-1", account: "bob", expires: Self.now + 9 * Self.day),
            ], position: 2)
        let requests = [
            CheckAccessRequest(accountID: Self.alice, capability: "pro").serialized(),
            CheckAccessRequest(accountID: "bob", capability: "pro").serialized(),
            CheckAccessRequest(accountID: "nobody", capability: "pro").serialized(),
            [], [0x0A, 0x7F], [0x0A, 0x00], [0xFF, 0xFF, 0xFF],
            CheckAccessRequest(accountID: String(repeating: "x", count: 300), capability: "pro").serialized(),
        ]
        func answers() -> [[UInt8]] {
            requests.map { bytes in
                var output: [UInt8] = []
                _ = try? bytes.withUnsafeBytes {
                    try EntitlementMethods.checkPacked(
                        $0, into: &output, view: view, policy: Self.policy, now: { Self.now })
                }
                return output
            }
        }
        let before = answers()
        #expect(try CheckAccessResponse(serialized: before[0]).allowed)
        #expect(try CheckAccessResponse(serialized: before[1]).allowed)
        let pointers = requests.map { bytes in
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
            copy.copyBytes(from: bytes)
            return UnsafeRawBufferPointer(copy)
        }
        defer { for pointer in pointers { pointer.deallocate() } }
        pointers.withUnsafeBufferPointer { view.prefetch(checks: $0) }
        // More than one prefetch takes at once.
        let many = Array(repeating: pointers[0], count: 100)
        many.withUnsafeBufferPointer { view.prefetch(checks: $0) }
        #expect(answers() == before)
        #expect(view.position == 2)
    }

    @Test(
        "a view from a snapshot knows when its position's change was committed: another ledger's change there is refused"
    )
    func snapshotCommitTime() {
        let view = EntitlementView()
        view.install(EntitlementView.Builder(), position: 12, committed: 1_790_000_000_500)
        #expect(!view.confirm(position: 12, committed: 1_790_000_000_501))
        let same = EntitlementView()
        same.install(EntitlementView.Builder(), position: 12, committed: 1_790_000_000_500)
        #expect(same.confirm(position: 12, committed: 1_790_000_000_500))
        // A snapshot without the time (an older ledger) takes the first one it is shown.
        let unknown = EntitlementView()
        unknown.install(EntitlementView.Builder(), position: 12)
        #expect(unknown.confirm(position: 12, committed: 7))
        #expect(!unknown.confirm(position: 12, committed: 8))
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension EntitlementViewTests {
    @Test("which subscription an answer names does not depend on the order the view learned of them")
    func arrivalOrder() throws {
        let subscriptions = [
            Self.apple("2000000000000029", account: Self.alice, expires: Self.now - Self.day),
            Self.apple("2000000000000003", account: Self.alice, expires: Self.now - Self.day),
            Self.google("token-b", account: Self.alice, expires: Self.now + 5 * Self.day),
            Self.google("token-a", account: Self.alice, expires: Self.now + 5 * Self.day),
            // A replacement issued yesterday that grants until the same instant (Play's deferred
            // plan change): the one that began first is named, whatever its key.
            {
                var later = Self.google("token-0", account: Self.alice, expires: Self.now + 5 * Self.day)
                later.purchaseTimeMilliseconds = Self.now - Self.day
                return later
            }(),
        ]
        var answers: Set<String> = []
        for order in [subscriptions, subscriptions.reversed(), [2, 4, 0, 3, 1].map { subscriptions[$0] }] {
            let view = EntitlementView()
            view.load(Array(order), position: 1)
            let allowed = try Self.check(view, Self.alice)
            let expired = try Self.check(view, Self.alice, at: Self.now + 6 * Self.day)
            let listed = try EntitlementMethods.list(
                ListEntitlementsRequest(accountID: Self.alice), view: view, policy: Self.policy, now: Self.now)
            // Two tokens granting until the same instant since the same start: the one whose key
            // comes first.
            #expect(allowed.allowed && allowed.grant?.key?.storeID == "token-a")
            // Both Apple ones expired at the same instant: the lower id.
            #expect(!expired.allowed && expired.grant?.key?.storeID == "2000000000000003")
            #expect(
                listed.entitlements.first?.grants.map { $0.key?.storeID ?? "" } == ["token-0", "token-a", "token-b"])
            answers.insert("\(allowed) \(expired) \(listed)")
        }
        #expect(answers.count == 1)
    }
}
