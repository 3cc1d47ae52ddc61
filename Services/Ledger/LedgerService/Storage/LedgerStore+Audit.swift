import Model
import Wire

/// Operators' actions that change no state, kept in the audit trail: a notification replayed, a
/// webhook event delivered again.
extension LedgerStore {
    /// Records `event` (its position set here) at the next change-feed position, in a change of
    /// kind ACCOUNT of its own that carries it and no subscription: `GetHistory` of its key and
    /// of its account finds it, and the change feed carries it like every event. Returns the
    /// position.
    @discardableResult
    func appendAuditEvent(_ event: LifecycleEvent, at: Int64) throws -> UInt64 {
        var event = event
        let position = try nextPosition()
        event.position = position
        event.verifiedTimeMilliseconds = event.verifiedTimeMilliseconds ?? at
        try insertEvent(event)
        try appendChange(Change(position: position, committedTimeMilliseconds: at, kind: .account, events: [event]))
        return position
    }
}
