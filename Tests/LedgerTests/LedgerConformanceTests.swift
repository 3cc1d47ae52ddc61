import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

@testable import LedgerService

/// One suite, run unchanged against every available engine.
@Suite("Ledger conformance")
struct LedgerConformanceTests {
    static let engines = LedgerEngine.available

    func withLedger(
        _ engine: LedgerEngine, policy: TransferPolicy = .transfer, _ body: (Ledger, TestClock) async throws -> Void
    ) async throws {
        try await engine.withLedger(policy: policy, body)
    }

    static func state(
        _ key: SubscriptionKey, _ state: SubscriptionState, storeTime: Int64, expires: Int64 = 1_800_000_000_000
    ) -> Subscription {
        Subscription(
            key: key, productID: "pro.monthly", productKind: .autoRenewable, state: state,
            expiresTimeMilliseconds: expires, autoRenew: state == .active, storeTimeMilliseconds: storeTime,
            bundleOrPackage: "com.example.app")
    }

    static func record(_ key: String, _ subscription: Subscription, kind: EventKind = .renewed)
        -> RecordVerifiedStateRequest
    {
        RecordVerifiedStateRequest(
            idempotencyKey: key, subscription: subscription,
            events: [
                LifecycleEvent(
                    key: subscription.key, kind: kind, storeTimeMilliseconds: subscription.storeTimeMilliseconds,
                    storeType: "DID_RENEW", rawPayload: "eyJhbGciOiJFUzI1NiJ9.e30.sig")
            ])
    }

    @Test(
        "the same notification recorded 5 times at once: one entry, one recorded, four duplicates", arguments: engines)
    func notificationDedup(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let entry = InboxEntry(
                store: .apple, environment: .sandbox, notificationID: "6c3b7e0a-1", notificationType: "DID_RENEW",
                signedTimeMilliseconds: 1_790_000_000_000, rawPayload: "payload")
            let answers = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<5 {
                    group.addTask {
                        try await ledger.inbox.recordNotification(RecordNotificationRequest(entry: entry)).duplicate
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(answers.filter { !$0 }.count == 1)
            #expect(answers.filter { $0 }.count == 4)
            let listed = try await ledger.inbox.listInbox(ListInboxRequest())
            #expect(listed.entries.map(\.notificationID) == ["6c3b7e0a-1"])
            #expect(listed.entries.first?.status == .pending)
        }
    }

    @Test(
        "snapshot chunks of large states end at the chunk bytes: each fits a frame, each state once", arguments: engines
    )
    func largeSnapshotChunks(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            // Sixty states of about 40 KB (256 periods each).
            let states = (0..<60).map { Subscription.large(.apple("big-\($0)")) }
            let size = states[0].serialized().count
            #expect(size > 30_000)
            _ = try await ledger.transactions.write { tx in
                for (index, state) in states.enumerated() {
                    try LedgerStore(tx).saveSubscription(state, position: UInt64(index + 1))
                }
            }
            var keys: [String] = []
            var counts: [Int] = []
            var cursor: LedgerChangeFeed.SnapshotCursor?
            repeat {
                let page = try await ledger.changeFeed.subscriptionChunk(after: cursor, limit: 500)
                #expect(page.chunk.count < Ledger.maxSnapshotChunkBytes + size + 16)
                keys += try SnapshotChunk(serialized: page.chunk).subscriptions.map(\.key.storeID)
                counts.append(page.count)
                cursor = page.next
            } while cursor != nil
            #expect(keys.sorted() == states.map(\.key.storeID).sorted())
            let perChunk = (Ledger.maxSnapshotChunkBytes + size + 3) / (size + 3)
            // Full chunks of as many as reach the bytes (a full one is followed by another page,
            // here an empty one).
            #expect(counts == [perChunk, perChunk, perChunk, perChunk, 0] && perChunk < 500)
        }
    }

    @Test(
        "a snapshot's states are sent as the pages subscriptionChunk reads, in order, each state once, with the pages ahead read ahead",
        arguments: engines)
    func sentSnapshotChunks(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, _ in
            // More states than a read-ahead span, so that spans run beside the pages.
            let states = (0..<2_500).map { Self.state(.apple("sent-\($0)"), .active, storeTime: Int64($0)) }
            _ = try await ledger.transactions.write { tx in
                for (index, state) in states.enumerated() {
                    try LedgerStore(tx).saveSubscription(state, position: UInt64(index + 1))
                }
            }
            var pages: [[UInt8]] = []
            var cursor: LedgerChangeFeed.SnapshotCursor?
            repeat {
                let page = try await ledger.changeFeed.subscriptionChunk(after: cursor, limit: 100)
                if page.count > 0 { pages.append(page.chunk) }
                cursor = page.next
            } while cursor != nil
            var sent: [[UInt8]] = []
            let count = try await ledger.changeFeed.sendSubscriptionChunks(limit: 100) { sent.append($0) }
            #expect(count == states.count)
            #expect(sent == pages && sent.count == 25)
            let keys = try sent.flatMap { try SnapshotChunk(serialized: $0).subscriptions.map(\.key.storeID) }
            #expect(keys.sorted() == states.map(\.key.storeID).sorted())
        }
    }

    @Test("facts applied in shuffled order end in the same current state as in store order", arguments: engines)
    func shuffledOrder(engine: LedgerEngine) async throws {
        let key = SubscriptionKey.apple("2000000111")
        let facts: [Subscription] = [
            Self.state(key, .active, storeTime: 1_000), Self.state(key, .gracePeriod, storeTime: 2_000),
            Self.state(key, .active, storeTime: 3_000), Self.state(key, .cancelled, storeTime: 4_000),
            Self.state(key, .expired, storeTime: 5_000),
        ]
        var finals: [Subscription] = []
        for order in [[0, 1, 2, 3, 4], [4, 2, 0, 3, 1], [3, 4, 1, 0, 2]] {
            try await withLedger(engine) { ledger, _ in
                for index in order {
                    _ = try await ledger.verifiedStates.recordVerifiedState(Self.record("k\(index)", facts[index]))
                }
                var current = try await ledger.verifiedStates.subscription(key)
                current.verifiedTimeMilliseconds = nil
                finals.append(current)
                let history = try await ledger.accounts.history(GetHistoryRequest(key: key))
                #expect(history.events.count == 5)
            }
        }
        #expect(finals.allSatisfy { $0 == finals[0] })
        #expect(finals[0].state == .expired)
        #expect(finals[0].storeTimeMilliseconds == 5_000)
    }

    @Test("an older fact goes to history but does not roll the state back", arguments: engines)
    func olderFact(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let key = SubscriptionKey.apple("2000000222")
            let newer = try await ledger.verifiedStates.recordVerifiedState(
                Self.record("a", Self.state(key, .expired, storeTime: 9_000)))
            #expect(newer.applied)
            let older = try await ledger.verifiedStates.recordVerifiedState(
                Self.record("b", Self.state(key, .active, storeTime: 1_000)))
            #expect(!older.applied)
            #expect(older.subscription?.state == .expired)
            #expect(older.position > newer.position)
            #expect(try await ledger.verifiedStates.subscription(key).state == .expired)
        }
    }

    @Test("an idempotency key replays its first answer; reused with other content it is refused", arguments: engines)
    func idempotency(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let key = SubscriptionKey.apple("2000000333")
            let request = Self.record("same-key", Self.state(key, .active, storeTime: 1_000))
            let first = try await ledger.verifiedStates.recordVerifiedState(request)
            let again = try await ledger.verifiedStates.recordVerifiedState(request)
            #expect(!first.replayed && again.replayed)
            #expect(again.position == first.position)
            #expect(again.subscription == first.subscription)
            await #expect(
                throws: LedgerError.failedPrecondition(
                    "idempotency key \"same-key\" was already used with a different request")
            ) {
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.record("same-key", Self.state(key, .expired, storeTime: 2_000)))
            }
            let history = try await ledger.accounts.history(GetHistoryRequest(key: key))
            #expect(history.events.count == 1)
        }
    }

    @Test("bad input is refused with a status naming the problem, and nothing is written", arguments: engines)
    func badInput(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let key = SubscriptionKey.apple("2000000444")
            await #expect(throws: LedgerError.invalidArgument("idempotency_key is missing")) {
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.record("", Self.state(key, .active, storeTime: 1)))
            }
            await #expect(throws: LedgerError.invalidArgument("subscription.key.store_id is missing")) {
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.record("x", Self.state(.apple(""), .active, storeTime: 1)))
            }
            var big = Self.record("y", Self.state(key, .active, storeTime: 1))
            big.events[0].rawPayload = String(repeating: "a", count: 64 * 1024 + 1)
            await #expect(
                throws: LedgerError.invalidArgument("events[0].raw_payload is 65537 bytes; at most 65536 are allowed")
            ) {
                _ = try await ledger.verifiedStates.recordVerifiedState(big)
            }
            await #expect(
                throws: LedgerError.invalidArgument(
                    "subscription.store_time_ms is missing: states are ordered by the store's time")
            ) {
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.record("t", Self.state(key, .active, storeTime: 0)))
            }
            var lineage = Self.state(key, .active, storeTime: 1)
            lineage.replacesStoreID = String(repeating: "t", count: 257)
            await #expect(
                throws: LedgerError.invalidArgument(
                    "subscription.replaces_store_id is 257 bytes; at most 256 are allowed")
            ) {
                _ = try await ledger.verifiedStates.recordVerifiedState(Self.record("r", lineage))
            }
            await #expect(throws: LedgerError.invalidArgument("entry.store is missing")) {
                _ = try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(entry: InboxEntry(notificationID: "n", notificationType: "TEST")))
            }
            await #expect(throws: LedgerError.notFound("no subscription apple/sandbox/2000000444")) {
                _ = try await ledger.verifiedStates.subscription(key)
            }
            await #expect(throws: LedgerError.notFound("no account \"nobody\" in the ledger")) {
                _ = try await ledger.accounts.account("nobody")
            }
            let changes = try await ledger.changeFeed.changes(after: 0, limit: 10)
            #expect(changes.isEmpty)
        }
    }

    @Test(
        "transfer policies: transfer moves the subscription, keep and refuse leave it; each claim is an event naming both accounts",
        arguments: engines)
    func transferPolicies(engine: LedgerEngine) async throws {
        for (policy, outcome, owner) in [
            (TransferPolicy.transfer, LinkOutcome.transferred, "bob"), (.keep, .kept, "alice"),
            (.refuse, .refused, "alice"),
        ] {
            try await withLedger(engine, policy: policy) { ledger, _ in
                let key = SubscriptionKey.apple("2000000555")
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.record("s", Self.state(key, .active, storeTime: 1_000)))
                let first = try await ledger.accounts.linkAccount(
                    LinkAccountRequest(idempotencyKey: "l1", key: key, accountID: "alice"))
                #expect(first.outcome == .linked)
                let again = try await ledger.accounts.linkAccount(
                    LinkAccountRequest(idempotencyKey: "l2", key: key, accountID: "alice"))
                #expect(again.outcome == .alreadyLinked)
                let claim = try await ledger.accounts.linkAccount(
                    LinkAccountRequest(idempotencyKey: "l3", key: key, accountID: "bob"))
                #expect(claim.outcome == outcome)
                #expect(claim.previousAccountID == "alice")
                #expect(try await ledger.verifiedStates.subscription(key).accountID == owner)
                #expect(try await ledger.accounts.account(owner).subscriptions.map(\.key) == [key])
                let loser = owner == "bob" ? "alice" : "bob"
                let loserSubscriptions = (try? await ledger.accounts.account(loser))?.subscriptions ?? []
                #expect(loserSubscriptions.isEmpty)
                let events = try await ledger.accounts.history(GetHistoryRequest(key: key)).events
                let claimEvent = try #require(events.first)
                #expect(claimEvent.accountID == "bob" && claimEvent.otherAccountID == "alice")
                #expect(claimEvent.kind == (policy == .transfer ? .accountTransferred : .other))
                // Both accounts' histories show the claim.
                let aliceHistory = try await ledger.accounts.history(GetHistoryRequest(accountID: "alice")).events
                #expect(aliceHistory.first?.otherAccountID == "alice" && aliceHistory.first?.accountID == "bob")
            }
        }
    }

    @Test("the change feed lists every change once, in order, resumable from any position", arguments: engines)
    func changeFeed(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        for index in 0..<10 {
                            let key = SubscriptionKey.apple("w\(writer)-\(index)")
                            _ = try await ledger.verifiedStates.recordVerifiedState(
                                Self.record(
                                    "w\(writer)-\(index)", Self.state(key, .active, storeTime: Int64(index + 1))))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let all = try await ledger.changeFeed.changes(after: 0, limit: 1000)
            #expect(all.map(\.position) == Array(UInt64(1)...40))
            for start in [0, 7, 23, 39, 40] {
                let resumed = try await ledger.changeFeed.changes(after: UInt64(start), limit: 1000)
                let expected: [UInt64] = start < 40 ? Array(UInt64(start + 1)...40) : []
                #expect(resumed.map(\.position) == expected)
            }
            // What a snapshot reads: the position, then the states page by page, each exactly
            // once, as the stream sends them (the stored bytes as field 1 of a chunk).
            #expect(try await ledger.changeFeed.lastPosition() == 40)
            var decoded: [Subscription] = []
            var pageSizes: [Int] = []
            var cursor: LedgerChangeFeed.SnapshotCursor?
            repeat {
                let page = try await ledger.changeFeed.subscriptionChunk(after: cursor, limit: 7)
                let chunk = try SnapshotChunk(serialized: page.chunk)
                #expect(chunk.subscriptions.count == page.count)
                #expect(chunk.links.isEmpty && !chunk.complete && chunk.position == 0)
                decoded += chunk.subscriptions
                pageSizes.append(page.count)
                cursor = page.next
            } while cursor != nil
            #expect(pageSizes == [7, 7, 7, 7, 7, 5])
            let ids = (0..<4).flatMap { writer in (0..<10).map { "w\(writer)-\($0)" } }.sorted()
            #expect(decoded.map(\.key.storeID).sorted() == ids)
            // Each state exactly as stored.
            for subscription in decoded {
                #expect(try await ledger.verifiedStates.subscription(subscription.key) == subscription)
            }
            // Links page the same way: three accounts over seven keys, pages of two.
            for (index, id) in ids.prefix(7).enumerated() {
                _ = try await ledger.accounts.linkAccount(
                    LinkAccountRequest(idempotencyKey: "link-\(id)", key: .apple(id), accountID: "a\(index % 3)"))
            }
            var links: [AccountLink] = []
            cursor = nil
            repeat {
                let page = try await ledger.changeFeed.linkPage(after: cursor, limit: 2)
                #expect(page.links.count <= 2)
                links += page.links
                cursor = page.next
            } while cursor != nil
            #expect(links.map(\.accountID) == (0..<7).map { "a\($0 % 3)" })
            #expect(links.map(\.key.storeID) == Array(ids.prefix(7)))
        }
    }

    @Test("the inbox work queue: mark failed with a reason, list failed, replay, mark processed", arguments: engines)
    func inboxQueue(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, clock in
            for id in ["n1", "n2", "n3"] {
                clock.advance(by: 1)
                _ = try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(
                        entry: InboxEntry(
                            store: .google, environment: .production, notificationID: id, notificationType: "4")))
            }
            let failed = try await ledger.inbox.markInbox(
                MarkInboxRequest(
                    store: .google, notificationID: "n2", status: .failed, error: "subscriptionsv2.get: 503"))
            #expect(failed.entry?.status == .failed && failed.entry?.attempts == 1)
            let failedList = try await ledger.inbox.listInbox(ListInboxRequest(status: .failed))
            #expect(failedList.entries.map(\.notificationID) == ["n2"])
            #expect(failedList.entries.first?.lastError == "subscriptionsv2.get: 503")
            let replayed = try await ledger.inbox.replayInbox(ReplayInboxRequest(store: .google, notificationID: "n2"))
            #expect(replayed.entry?.status == .pending)
            _ = try await ledger.inbox.markInbox(
                MarkInboxRequest(store: .google, notificationID: "n1", status: .processed))
            let page1 = try await ledger.inbox.listInbox(ListInboxRequest(pageSize: 1))
            #expect(page1.entries.map(\.notificationID) == ["n2"])
            let page2 = try await ledger.inbox.listInbox(ListInboxRequest(pageSize: 1, pageToken: page1.nextPageToken))
            #expect(page2.entries.map(\.notificationID) == ["n3"])
            #expect(page2.nextPageToken == nil)
            await #expect(throws: LedgerError.notFound("no inbox entry google/missing")) {
                _ = try await ledger.inbox.replayInbox(ReplayInboxRequest(store: .google, notificationID: "missing"))
            }
        }
    }

    @Test(
        "a rejected notification is kept with its reason, listed only when asked for, and never replayed",
        arguments: engines)
    func rejectedNotification(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let recorded = try await ledger.inbox.recordNotification(
                RecordNotificationRequest(
                    entry: InboxEntry(
                        store: .apple, environment: .production, notificationID: "rejected-5e5e",
                        notificationType: "UNVERIFIED",
                        status: .rejected, lastError: "bad_signature: the ES256 signature does not verify")))
            #expect(!recorded.duplicate && recorded.entry?.status == .rejected)
            #expect(try await ledger.inbox.listInbox(ListInboxRequest()).entries.isEmpty)
            let rejected = try await ledger.inbox.listInbox(ListInboxRequest(status: .rejected))
            #expect(rejected.entries.map(\.notificationID) == ["rejected-5e5e"])
            #expect(rejected.entries.first?.lastError == "bad_signature: the ES256 signature does not verify")
            await #expect(
                throws: LedgerError.failedPrecondition(
                    "notification rejected-5e5e was rejected; it is kept for audit only")
            ) {
                _ = try await ledger.inbox.replayInbox(
                    ReplayInboxRequest(store: .apple, notificationID: "rejected-5e5e"))
            }
            // A verified state naming it does not mark it processed either.
            _ = try await ledger.verifiedStates.recordVerifiedState(
                RecordVerifiedStateRequest(
                    idempotencyKey: "after-rejected",
                    subscription: Self.state(
                        SubscriptionKey(store: .apple, environment: .production, storeID: "rejected-sub"), .active,
                        storeTime: 1),
                    notificationID: "rejected-5e5e"))
            let still = try await ledger.inbox.listInbox(ListInboxRequest(status: .rejected))
            #expect(still.entries.map(\.notificationID) == ["rejected-5e5e"] && still.entries.first?.attempts == 0)
            await #expect(
                throws: LedgerError.invalidArgument("entry.last_error (the reason for the rejection) is missing")
            ) {
                _ = try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(
                        entry: InboxEntry(
                            store: .apple, environment: .production, notificationID: "rejected-none",
                            notificationType: "UNVERIFIED", status: .rejected)))
            }
        }
    }

    @Test(
        "an inbox page ends before its entries pass the page's byte bound, and the pages cover every entry once",
        arguments: engines)
    func inboxPagesAreByteBounded(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            // Ten entries of 60 KiB each: 600 KiB would not fit a page of 256 KiB.
            let payload = String(repeating: "x", count: 60 * 1024)
            for index in 0..<10 {
                _ = try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(
                        entry: InboxEntry(
                            store: .apple, environment: .production, notificationID: "big-\(index)",
                            notificationType: "DID_RENEW", rawPayload: payload)))
            }
            var seen: [String] = []
            var token: String?
            var pages = 0
            repeat {
                let page = try await ledger.inbox.listInbox(ListInboxRequest(pageSize: 500, pageToken: token))
                #expect(page.entries.count == 4 || (page.entries.count == 2 && page.nextPageToken == nil))
                #expect(page.serialized().count < 256 * 1024 + 64 * 1024)
                seen += page.entries.map(\.notificationID)
                token = page.nextPageToken
                pages += 1
            } while token != nil && pages < 10
            #expect(pages == 3)
            #expect(seen.sorted() == (0..<10).map { "big-\($0)" }.sorted())
        }
    }

    @Test("subscriptions are listed by store, state and expiry window, a page at a time", arguments: engines)
    func listSubscriptions(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let rows: [(String, SubscriptionState, Int64)] = [
                ("a1", .active, 1_000), ("a2", .active, 5_000), ("g1", .gracePeriod, 2_000),
                ("r1", .billingRetry, 1_500), ("e1", .expired, 500), ("a3", .cancelled, 2_500),
            ]
            for (id, state, expires) in rows {
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.record("list-\(id)", Self.state(.apple(id), state, storeTime: 10, expires: expires)))
            }
            _ = try await ledger.verifiedStates.recordVerifiedState(
                Self.record(
                    "list-google",
                    Self.state(
                        SubscriptionKey(store: .google, environment: .production, storeID: "tok"), .active,
                        storeTime: 10)))
            func ids(_ request: ListSubscriptionsRequest) async throws -> [String] {
                try await ledger.verifiedStates.listSubscriptions(request).subscriptions.map(\.key.storeID)
            }
            #expect(try await ids(ListSubscriptionsRequest(store: .apple, state: .gracePeriod)) == ["g1"])
            #expect(try await ids(ListSubscriptionsRequest(store: .apple, state: .active)) == ["a1", "a2"])
            #expect(
                try await ids(
                    ListSubscriptionsRequest(
                        store: .apple, expiresAfterMilliseconds: 1_000, expiresBeforeMilliseconds: 2_500))
                    == ["a1", "g1", "r1"])
            var pages: [[String]] = []
            var token: String?
            repeat {
                let page = try await ledger.verifiedStates.listSubscriptions(
                    ListSubscriptionsRequest(store: .apple, pageSize: 4, pageToken: token))
                pages.append(page.subscriptions.map(\.key.storeID))
                token = page.nextPageToken
            } while token != nil
            #expect(pages == [["a1", "a2", "a3", "e1"], ["g1", "r1"]])
            #expect(try await ids(ListSubscriptionsRequest(store: .google)) == ["tok"])
            await #expect(throws: LedgerError.invalidArgument("store is missing")) {
                _ = try await ledger.verifiedStates.listSubscriptions(ListSubscriptionsRequest())
            }
        }
    }

    @Test("a cursor starts at 0, only moves forward, and keeps when it moved", arguments: engines)
    func cursors(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, clock in
            #expect(
                try await ledger.cursors.cursor(GetCursorRequest(name: "apple-history"))
                    == Cursor(name: "apple-history"))
            clock.advance(by: 5)
            let first = try await ledger.cursors.advanceCursor(AdvanceCursorRequest(name: "apple-history", value: 500))
            #expect(first.value == 500)
            let moved = first.updatedTimeMilliseconds
            clock.advance(by: 5)
            #expect(
                try await ledger.cursors.advanceCursor(AdvanceCursorRequest(name: "apple-history", value: 300)) == first
            )
            let later = try await ledger.cursors.advanceCursor(AdvanceCursorRequest(name: "apple-history", value: 900))
            #expect(later.value == 900 && later.updatedTimeMilliseconds! > moved!)
            #expect(try await ledger.cursors.cursor(GetCursorRequest(name: "apple-history")) == later)
            await #expect(throws: LedgerError.invalidArgument("name is missing")) {
                _ = try await ledger.cursors.advanceCursor(AdvanceCursorRequest(name: "", value: 1))
            }
            // A negative value, or the event log's own cursor, is refused and changes nothing: the
            // event state still reads (a stored negative once crashed its reader).
            await #expect(
                throws: LedgerError.invalidArgument("value -1 is negative; a cursor counts up from 0")
            ) {
                _ = try await ledger.cursors.advanceCursor(AdvanceCursorRequest(name: "apple-history", value: -1))
            }
            for own in ["events.feed", "events.start"] {
                await #expect(
                    throws: LedgerError.invalidArgument(
                        "name \(own) is the event log's own cursor; the events lease and AppendEvents set it")
                ) {
                    _ = try await ledger.cursors.advanceCursor(AdvanceCursorRequest(name: own, value: 5))
                }
            }
            #expect(try await ledger.cursors.cursor(GetCursorRequest(name: "apple-history")) == later)
            #expect(
                try await ledger.cursors.cursor(GetCursorRequest(name: "events.feed")) == Cursor(name: "events.feed"))
            let events = try await ledger.eventLog.eventState(GetEventStateRequest())
            #expect(!events.started && events.throughFeedPosition == 0)
            // A negative position stored before these checks reads as 0, not a crash.
            _ = try await ledger.transactions.write { tx in
                try tx.query(
                    "INSERT INTO cursors (name, value, updated_ms) VALUES ($1, $2, $3)",
                    [.text("events.feed"), .int(-1), .int(0)])
            }
            let stored = try await ledger.eventLog.eventState(GetEventStateRequest())
            #expect(stored.started && stored.throughFeedPosition == 0)
        }
    }

    @Test("history pages newest first and can be followed to the end", arguments: engines)
    func historyPages(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let key = SubscriptionKey.apple("2000000666")
            for index in 1...5 {
                _ = try await ledger.verifiedStates.recordVerifiedState(
                    Self.record("h\(index)", Self.state(key, .active, storeTime: Int64(index))))
            }
            var positions: [UInt64] = []
            var token: String?
            repeat {
                let page = try await ledger.accounts.history(GetHistoryRequest(key: key, pageSize: 2, pageToken: token))
                positions += page.events.compactMap(\.position)
                token = page.nextPageToken
            } while token != nil
            #expect(positions == [5, 4, 3, 2, 1])
        }
    }

    @Test(
        "a purchase that replaced another takes over its account and the replaced one records its successor",
        arguments: engines)
    func lineage(engine: LedgerEngine) async throws {
        try await withLedger(engine) { ledger, _ in
            let old = SubscriptionKey(store: .google, environment: .production, storeID: "token-old")
            let new = SubscriptionKey(store: .google, environment: .production, storeID: "token-new")
            _ = try await ledger.verifiedStates.recordVerifiedState(
                Self.record("o", Self.state(old, .active, storeTime: 1_000)))
            _ = try await ledger.accounts.linkAccount(
                LinkAccountRequest(idempotencyKey: "lo", key: old, accountID: "carol"))
            var upgrade = Self.state(new, .active, storeTime: 2_000)
            upgrade.replacesStoreID = "token-old"
            let recorded = try await ledger.verifiedStates.recordVerifiedState(Self.record("n", upgrade))
            #expect(recorded.subscription?.accountID == "carol")
            #expect(try await ledger.verifiedStates.subscription(old).replacedByStoreID == "token-new")
            let account = try await ledger.accounts.account("carol")
            #expect(Set(account.subscriptions.map(\.key)) == [old, new])
            #expect(Set(account.links.map(\.key)) == [old, new])
            let changes = try await ledger.changeFeed.changes(after: 0, limit: 10)
            #expect(changes.map(\.position) == [1, 2, 3, 4])
            #expect(changes.last?.subscription?.key == old)
            // The store's later word on the replaced purchase (expired by replacement) keeps the lineage.
            _ = try await ledger.verifiedStates.recordVerifiedState(
                Self.record("o2", Self.state(old, .expired, storeTime: 3_000)))
            let replaced = try await ledger.verifiedStates.subscription(old)
            #expect(replaced.state == .expired && replaced.replacedByStoreID == "token-new")
        }
    }
}
