import LedgerService
import Model
import Observability
import Testing
import Wire

@Suite("Ledger: what one trace recorded")
struct LedgerTraceTests {
    static let engines = LedgerEngine.available
    static let notificationTrace = TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")!
    static let linkTrace = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!

    /// Takes a database back to before migration 8: no trace columns or indexes.
    static func dropTraceColumns(_ tx: any LedgerTransaction) throws {
        try tx.query("DROP INDEX inbox_by_trace")
        try tx.query("DROP INDEX events_by_trace")
        try tx.query("ALTER TABLE inbox DROP COLUMN trace_id")
        try tx.query("ALTER TABLE events DROP COLUMN trace_id")
    }

    /// A notification and the state it brought, recorded under `notificationTrace`; the link of
    /// its subscription to an account under `linkTrace`.
    static func record(_ ledger: Ledger, at: Int64) async throws -> SubscriptionKey {
        let key = SubscriptionKey.apple("2000")
        try await TraceContext.$current.withValue(notificationTrace) {
            _ = try await ledger.inbox.recordNotification(
                RecordNotificationRequest(
                    entry: InboxEntry(
                        store: .apple, environment: .sandbox, notificationID: "n-1", notificationType: "SUBSCRIBED",
                        signedTimeMilliseconds: at, key: key, rawPayload: "signed-notification")))
            _ = try await ledger.verifiedStates.recordVerifiedState(
                RecordVerifiedStateRequest(
                    idempotencyKey: "state-1", subscription: LedgerConformanceTests.state(key, .active, storeTime: at),
                    events: [
                        LifecycleEvent(
                            key: key, kind: .purchased, storeTimeMilliseconds: at, storeType: "SUBSCRIBED",
                            notificationID: "n-1", rawPayload: "payload", rawTransaction: "transaction")
                    ], notificationID: "n-1"))
        }
        try await TraceContext.$current.withValue(linkTrace) {
            _ = try await ledger.accounts.linkAccount(
                LinkAccountRequest(idempotencyKey: "link-1", key: key, accountID: "acct-1"))
        }
        return key
    }

    @Test(
        "a notification's trace id is kept with its inbox entry and with the events its call recorded, in the history and the change feed",
        arguments: engines)
    func keptWithEntryAndEvents(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let key = try await Self.record(ledger, at: clock.now)
            let traceID = Self.notificationTrace.traceID
            let inbox = try await ledger.inbox.listInbox(ListInboxRequest(status: .processed))
            #expect(inbox.entries.map(\.notificationID) == ["n-1"])
            #expect(inbox.entries.map(\.traceID) == [traceID])
            let history = try await ledger.accounts.history(GetHistoryRequest(key: key))
            #expect(history.events.map(\.kind) == [.accountLinked, .purchased])
            #expect(history.events.map(\.traceID) == [Self.linkTrace.traceID, traceID])
            let changes = try await ledger.changeFeed.changes(after: 0, limit: 100)
            #expect(changes.flatMap(\.events).map(\.traceID) == [traceID, Self.linkTrace.traceID])
        }
    }

    @Test(
        "a notification delivered again under another trace keeps the trace it was first recorded under",
        arguments: engines)
    func duplicateKeepsFirstTrace(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            _ = try await Self.record(ledger, at: clock.now)
            let again = try await TraceContext.$current.withValue(Self.linkTrace) {
                try await ledger.inbox.recordNotification(
                    RecordNotificationRequest(
                        entry: InboxEntry(
                            store: .apple, environment: .sandbox, notificationID: "n-1", notificationType: "SUBSCRIBED",
                            rawPayload: "signed-notification")))
            }
            #expect(again.duplicate)
            #expect(again.entry?.traceID == Self.notificationTrace.traceID)
        }
    }

    @Test(
        "FindTrace returns the inbox entries and events of one trace without their raw data, and nothing for another",
        arguments: engines)
    func findTrace(engine: LedgerEngine) async throws {
        try await engine.withLedger { ledger, clock in
            let key = try await Self.record(ledger, at: clock.now)
            let found = try await ledger.inbox.findTrace(FindTraceRequest(traceID: Self.notificationTrace.traceID))
            #expect(found.inboxEntries.map(\.notificationID) == ["n-1"])
            #expect(found.inboxEntries.map(\.rawPayload) == [""])
            #expect(found.inboxEntries.map(\.status) == [.processed])
            #expect(found.events.map(\.kind) == [.purchased])
            #expect(found.events.map(\.key) == [key])
            #expect(found.events.map(\.rawPayload) == [nil] && found.events.map(\.rawTransaction) == [nil])
            let linked = try await ledger.inbox.findTrace(FindTraceRequest(traceID: Self.linkTrace.traceID))
            #expect(linked.inboxEntries.isEmpty && linked.events.map(\.kind) == [.accountLinked])
            let other = try await ledger.inbox.findTrace(FindTraceRequest(traceID: TraceContext.start().traceID))
            #expect(other.inboxEntries.isEmpty && other.events.isEmpty)
        }
    }

    @Test(
        "FindTrace refuses what is not a trace id",
        arguments: [
            "", "0af7651916cd43dd8448eb211c80319", "0AF7651916CD43DD8448EB211C80319C",
            String(repeating: "0", count: 32),
        ])
    func findTraceRefuses(traceID: String) async throws {
        try await LedgerEngine.sqlite.withLedger { ledger, _ in
            await #expect(throws: LedgerError.self) {
                _ = try await ledger.inbox.findTrace(FindTraceRequest(traceID: traceID))
            }
        }
    }

    @Test("rows recorded before migration 8 have no trace id and are not found by one", arguments: engines)
    func migration(engine: LedgerEngine) async throws {
        let (database, remove) = try await engine.open()
        defer { remove() }
        try await database.write { tx in
            try Self.dropTraceColumns(tx)
            try MigrationTests.dropUnacknowledgedColumn(tx)
            try tx.query("DELETE FROM schema_migrations WHERE version >= 8")
        }
        let ledger = Ledger(database: database)
        // Written by a ledger of version 7: the same rows without the column.
        _ = try await database.write { tx in
            try tx.query(
                """
                INSERT INTO inbox (store, notification_id, status, attempts, last_error, received_ms, entry)
                VALUES (1, 'n-old', 1, 0, NULL, 1, $1)
                """,
                [
                    .blob(
                        InboxEntry(
                            store: .apple, environment: .sandbox, notificationID: "n-old", notificationType: "TEST",
                            status: .pending, rawPayload: ""
                        ).serialized())
                ])
        }
        try await database.migrate()
        let old = try await ledger.inbox.listInbox(ListInboxRequest())
        #expect(old.entries.map(\.notificationID) == ["n-old"] && old.entries.map(\.traceID) == [nil])
        _ = try await Self.record(ledger, at: 1_790_000_000_000)
        let found = try await ledger.inbox.findTrace(FindTraceRequest(traceID: Self.notificationTrace.traceID))
        #expect(found.inboxEntries.map(\.notificationID) == ["n-1"])
        await database.close()
    }
}
