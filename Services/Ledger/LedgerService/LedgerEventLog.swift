import Crypto
import Foundation
import Model
public import Wire

/// The event log and what event computation needs to resume: the entitlement instance that
/// holds the `events` lease appends the events it computes from the feed and the clock; the
/// ledger keeps them in one order (the log's sequence), once each by id, and keeps from the
/// access events the access announced and not yet ended; and webhook delivery state per
/// endpoint (`LedgerEventLog+Deliveries`).
public struct LedgerEventLog: Sendable {
    let transactions: LedgerTransactions
}

extension LedgerEventLog {
    static let maxAppendedEvents = 1000
    static let maxListedEvents: UInt32 = 1000
    /// The most log entries one `ListEvents` looks at when its types pass over some.
    static let maxScannedEntries = 10_000
    static let maxStatePage = 1000

    /// The log after `after_sequence`, at most `limit` entries looked at, those of `types`; a
    /// page also stops once its events reach `maxPageBytes` (each holds its subscription's
    /// state), `last_sequence` then being the last one given.
    public func listEvents(_ request: ListEventsRequest) async throws -> ListEventsResponse {
        let limit = request.limit == 0 ? Ledger.defaultPageSize : request.limit
        guard limit <= Self.maxListedEvents else {
            throw LedgerError.invalidArgument("limit \(limit) is above the maximum of \(Self.maxListedEvents)")
        }
        guard request.types.count <= 100 else {
            throw LedgerError.invalidArgument("at most 100 types, got \(request.types.count)")
        }
        for (index, type) in request.types.enumerated() where !EventType.isValidPattern(type) {
            throw LedgerError.invalidArgument(
                "types[\(index)] \"\(type.prefix(64))\" is not an event type or a prefix with .* (subscription.*)")
        }
        return try await transactions.read { tx in
            let store = LedgerStore(tx)
            var response = ListEventsResponse(lastSequence: request.afterSequence)
            var bytes = 0
            var scanned = 0
            // With types, entries that do not match are passed over until `limit` events match,
            // the log ends, or `maxScannedEntries` were looked at (`last_sequence` says where to
            // go on from).
            scan: while response.events.count < Int(limit), scanned < Self.maxScannedEntries {
                let batch = try store.logEntries(after: response.lastSequence, limit: limit)
                for (sequence, type, stored) in batch {
                    scanned += 1
                    if EventType.matches(type, request.types) {
                        bytes += stored?.count ?? 0
                        if !response.events.isEmpty && bytes > Ledger.maxPageBytes { break scan }
                        var event = try LedgerStore.decode(Event.self, stored)
                        event.sequence = sequence
                        response.events.append(event)
                    }
                    response.lastSequence = sequence
                    if response.events.count == Int(limit) { break scan }
                }
                if batch.count < Int(limit) { break }
            }
            return response
        }
    }

    /// `AppendEvents`, checked and ready for the writer.
    public func appendEvents(_ request: AppendEventsRequest) async throws -> AppendEventsResponse {
        try await transactions.write(try appendEventsWrite(request))
    }

    func appendEventsWrite(_ request: AppendEventsRequest) throws -> WriteBody<AppendEventsResponse> {
        try Ledger.check(request.owner, "owner", max: Ledger.maxCursorNameBytes)
        guard request.events.count <= Self.maxAppendedEvents else {
            throw LedgerError.invalidArgument(
                "at most \(Self.maxAppendedEvents) events per append, got \(request.events.count)")
        }
        for (index, event) in request.events.enumerated() {
            for (value, limit) in [
                (event.id, Event.Limits.id), (event.type, Event.Limits.type),
                (event.accountID ?? "", Event.Limits.accountID),
            ] {
                try Ledger.check(value, limit, "events[\(index)].\(limit.field)")
            }
            if event.type.hasPrefix("access.") {
                guard let capability = event.capability, !capability.isEmpty, event.accountID != nil else {
                    throw LedgerError.invalidArgument(
                        "events[\(index)] is an access event without an account and a capability")
                }
                try Ledger.check(capability, Event.Limits.capability, "events[\(index)].capability")
            }
        }
        let at = transactions.leaseNow()
        return { tx in
            let store = LedgerStore(tx)
            try LedgerCursors.checkLease(store, Ledger.eventsLease, owner: request.owner, at: at)
            var appended: UInt32 = 0
            for var event in request.events {
                event.sequence = 0
                guard try store.appendLogEvent(event, once: true) != nil else { continue }
                appended += 1
                try Self.recordAccess(store, event)
            }
            try store.raiseCursor(Ledger.eventsCursor, to: Int64(clamping: request.throughFeedPosition), at: at)
            return AppendEventsResponse(appended: appended, lastSequence: try store.lastLogSequence())
        }
    }

    /// `LogTestEvent`: a `test` event at the end of the log.
    public func logTestEvent(_ request: LogTestEventRequest) async throws -> Event {
        try await transactions.write(try logTestEventWrite(request))
    }

    func logTestEventWrite(_ request: LogTestEventRequest) throws -> WriteBody<Event> {
        try Ledger.check(request.accountID, LogTestEventRequest.Limits.accountID)
        let at = transactions.now()
        let id = "evt_test_" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) })
        return { tx in
            var event = Event(
                id: id, type: EventType.test, accountID: request.accountID,
                position: UInt64(try LedgerStore(tx).lastPosition()), recordedTimeMilliseconds: at)
            event.sequence = try LedgerStore(tx).appendLogEvent(event, once: false) ?? 0
            return event
        }
    }

    /// Keeps `access_state` as the access events say: announced by `granted` and `extended`,
    /// withdrawn by `ended`.
    static func recordAccess(_ store: LedgerStore, _ event: Event) throws {
        guard let account = event.accountID, let capability = event.capability else { return }
        switch event.type {
        case EventType.accessGranted, EventType.accessExtended:
            let state = AnnouncedAccess(
                accountID: account, capability: capability, untilMilliseconds: event.accessUntilMilliseconds,
                position: event.position, key: event.key)
            try store.saveAnnouncedAccess(state)
        case EventType.accessEnded:
            try store.deleteAnnouncedAccess(account: account, capability: capability)
        default:
            break
        }
    }

    /// Where event computation stands, a page of the announced access at a time.
    public func eventState(_ request: GetEventStateRequest) async throws -> GetEventStateResponse {
        var after: (account: String, capability: String)?
        if let token = request.pageToken {
            let parts = token.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let account = Hex.decode(parts[0]).flatMap({ String(bytes: $0, encoding: .utf8) }),
                let capability = Hex.decode(parts[1]).flatMap({ String(bytes: $0, encoding: .utf8) })
            else {
                throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
            }
            after = (account, capability)
        }
        let start = after
        return try await transactions.read { tx in
            let store = LedgerStore(tx)
            let cursor = try store.storedCursor(Ledger.eventsCursor)
            var response = GetEventStateResponse(
                started: cursor != nil, throughFeedPosition: UInt64(clamping: cursor?.value ?? 0))
            response.startFeedPosition = UInt64(clamping: try store.cursor(Ledger.eventsStartCursor).value)
            response.announced = try store.announcedAccess(
                after: start?.account ?? "", start?.capability ?? "", limit: Self.maxStatePage)
            if response.announced.count == Self.maxStatePage, let last = response.announced.last {
                response.nextPageToken = Hex.encode(last.accountID.utf8) + ":" + Hex.encode(last.capability.utf8)
            }
            return response
        }
    }

    /// Starts the event log, when it has not started, at the newest position of the feed
    /// committed by `turnedOn` (when the asking instance turned the log on; nil: now): the first
    /// holder of the `events` lease computes the events of every change after it (on a new
    /// ledger, position 0: every change). Written under the writer's position lock, so a change
    /// is either at or before the start (taken as known) or after it (given events).
    static func startEventLog(_ store: LedgerStore, turnedOn: Int64?, at: Int64) throws {
        guard try store.storedCursor(Ledger.eventsCursor) == nil else { return }
        let head = try turnedOn.map { try store.lastPosition(committedBy: $0) } ?? store.lastPosition()
        for name in [Ledger.eventsCursor, Ledger.eventsStartCursor] {
            try store.insertCursor(name, value: head, at: at)
        }
    }
}
