import Model
import Observability
public import Wire

extension LedgerInbox {
    /// Inbox entries `FindTrace` returns at most.
    static let maxTraceEntries = 100
    /// Events `FindTrace` returns at most.
    static let maxTraceEvents = 500

    /// `FindTrace`: what the ledger kept under one trace id, by index: the inbox entries the
    /// calls of that trace received (without their raw payload) and the events they recorded
    /// (without their raw store data), each in the order recorded. INVALID_ARGUMENT when
    /// `trace_id` is not 32 lowercase hex digits, not all zero.
    public func findTrace(_ request: FindTraceRequest) async throws -> FindTraceResponse {
        guard TraceContext.isTraceID(request.traceID) else {
            throw LedgerError.invalidArgument(
                "trace_id \"\(request.traceID.prefix(40))\" is not a trace id (32 lowercase hex digits, not all zero)")
        }
        let traceID = request.traceID
        return try await transactions.read { tx in
            let store = LedgerStore(tx)
            var response = FindTraceResponse()
            response.inboxEntries = try store.inboxEntries(traceID: traceID, limit: Self.maxTraceEntries).map {
                var entry = $0
                entry.rawPayload = ""
                return entry
            }
            response.events = try store.events(traceID: traceID, limit: Self.maxTraceEvents).map {
                var event = $0
                event.rawPayload = nil
                event.rawTransaction = nil
                event.rawRenewalInfo = nil
                return event
            }
            return response
        }
    }
}
