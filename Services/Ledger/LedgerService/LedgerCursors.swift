import Model
public import Wire

/// Named cursors (how far a reader got) and leases (which instance does a job now).
public struct LedgerCursors: Sendable {
    let transactions: LedgerTransactions
}

extension LedgerCursors {
    /// A cursor as stored (value 0 when never advanced).
    public func cursor(_ request: GetCursorRequest) async throws -> Cursor {
        try Ledger.check(request.name, "name", max: Ledger.maxCursorNameBytes)
        return try await transactions.read { tx in try LedgerStore(tx).cursor(request.name) }
    }

    /// Advances a cursor to `value`; a lower value leaves it where it is. The ledger's own
    /// cursors (the event log's `events.feed`, moved only by `AppendEvents`, and
    /// `ledger.access-rules`) are not a caller's to move, and a value is never negative.
    public func advanceCursor(_ request: AdvanceCursorRequest) async throws -> Cursor {
        try await transactions.write(try advanceCursorWrite(request))
    }

    func advanceCursorWrite(_ request: AdvanceCursorRequest) throws -> WriteBody<Cursor> {
        try Ledger.check(request.name, "name", max: Ledger.maxCursorNameBytes)
        for own in [Ledger.eventsCursor, Ledger.eventsStartCursor] where request.name == own {
            throw LedgerError.invalidArgument(
                "name \(own) is the event log's own cursor; the events lease and AppendEvents set it")
        }
        guard request.name != Ledger.accessRulesCursor else {
            throw LedgerError.invalidArgument(
                "name \(Ledger.accessRulesCursor) is the ledger's own cursor; it records the access rules applied")
        }
        guard request.value >= 0 else {
            throw LedgerError.invalidArgument("value \(request.value) is negative; a cursor counts up from 0")
        }
        let at = transactions.now()
        return { tx in
            try LedgerStore(tx).raiseCursor(request.name, to: request.value, at: at)
            return try LedgerStore(tx).cursor(request.name)
        }
    }

    /// Takes or renews lease `name` for `owner`.
    public func acquireLease(_ request: AcquireLeaseRequest) async throws -> AcquireLeaseResponse {
        try await transactions.write(try acquireLeaseWrite(request))
    }

    func acquireLeaseWrite(_ request: AcquireLeaseRequest) throws -> WriteBody<AcquireLeaseResponse> {
        try Ledger.check(request.name, "name", max: Ledger.maxCursorNameBytes)
        guard request.name != Ledger.accessRulesLease else {
            throw LedgerError.invalidArgument("lease \(Ledger.accessRulesLease) is the ledger's own")
        }
        try Ledger.check(request.owner, "owner", max: Ledger.maxCursorNameBytes)
        guard Ledger.leaseMilliseconds.contains(request.ttlMilliseconds) else {
            throw LedgerError.invalidArgument(
                "ttl_ms \(request.ttlMilliseconds) is not between \(Ledger.leaseMilliseconds.lowerBound) and \(Ledger.leaseMilliseconds.upperBound)"
            )
        }
        if let logOn = request.logOnMilliseconds, logOn < 0 {
            throw LedgerError.invalidArgument("log_on_ms \(logOn) is negative")
        }
        let at = transactions.now()
        let leaseAt = transactions.leaseNow()
        return { tx in
            let store = LedgerStore(tx)
            let answer = try Self.takeLease(
                store, request.name, owner: request.owner, for: request.ttlMilliseconds, at: leaseAt)
            if answer.held, request.name == Ledger.eventsLease {
                try LedgerEventLog.startEventLog(store, turnedOn: request.logOnMilliseconds, at: at)
            }
            return answer
        }
    }

    /// Throws FAILED_PRECONDITION unless `owner` holds lease `name` now.
    static func checkLease(_ store: LedgerStore, _ name: String, owner: String, at: Int64) throws {
        let (holder, expires) = try store.lease(name)
        guard holder == owner, (expires ?? 0) > at else {
            if holder == owner, let expires {
                throw LedgerError.failedPrecondition(
                    "the \(name) lease of \(owner) expired at \(expires) ms, before \(at): take it again with AcquireLease"
                )
            }
            throw LedgerError.failedPrecondition(
                holder.map { "the \(name) lease is held by \($0), not by \(owner)" }
                    ?? "the \(name) lease is not held: take it with AcquireLease first")
        }
    }

    /// Takes or renews lease `name` for `owner` until `milliseconds` after `at`, unless another
    /// owner holds it unexpired (then `held` is false and the answer names that owner).
    static func takeLease(
        _ store: LedgerStore, _ name: String, owner: String, for milliseconds: Int64, at: Int64
    ) throws -> AcquireLeaseResponse {
        let held = try store.lease(name)
        if let holder = held.owner, holder != owner, let expires = held.expires, expires > at {
            return AcquireLeaseResponse(held: false, owner: holder, expiresMilliseconds: expires)
        }
        let expires = at + milliseconds
        try store.saveLease(name, owner: owner, expires: expires)
        return AcquireLeaseResponse(held: true, owner: owner, expiresMilliseconds: expires)
    }
}
