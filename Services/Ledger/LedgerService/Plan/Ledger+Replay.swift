import Model
import Wire

/// Rules shared by the ledger's writes that need no storage: what the change feed carries of an
/// event, and how an idempotency key used before answers.
extension Ledger {
    /// An event as the change feed carries it: the raw store data (tens of KiB for an Apple
    /// notification) stays in the history, which `GetHistory` serves.
    static func withoutRawData(_ event: LifecycleEvent) -> LifecycleEvent {
        var event = event
        event.rawPayload = nil
        event.rawTransaction = nil
        event.rawRenewalInfo = nil
        return event
    }

    /// The stored answer when `storedHash` is this request's; FAILED_PRECONDITION otherwise.
    static func replayed<Response: ProtoMessage>(
        _ key: String, _ storedHash: String, _ hash: String, _ response: [UInt8]?, as: Response.Type
    ) throws -> Response {
        if storedHash.hasPrefix(deletedRecordPrefix) {
            throw LedgerError.failedPrecondition(
                "idempotency key \"\(key)\" was used for a request about an account deleted since: it is not run again")
        }
        guard storedHash == hash else {
            throw LedgerError.failedPrecondition("idempotency key \"\(key)\" was already used with a different request")
        }
        return try LedgerStore.decode(Response.self, response)
    }
}
