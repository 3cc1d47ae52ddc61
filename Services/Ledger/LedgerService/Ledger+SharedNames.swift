import Model

/// The names the ledger's parts share: the cursors and leases of the event log, of webhook
/// delivery and of the access-rules pass; how a deleted account
/// reads where it was.
extension Ledger {
    /// The lease the appending instance holds.
    public static let eventsLease = "events"
    /// The cursor holding the feed position event computation has covered.
    static let eventsCursor = "events.feed"
    /// The cursor holding the feed position the log began at.
    static let eventsStartCursor = "events.start"
    static let leaseMilliseconds: ClosedRange<Int64> = 1000...60_000
    /// The lease an endpoint's deliverer holds.
    public static func deliveryLease(_ endpoint: String) -> String { "webhook.\(endpoint)" }
    /// The version of the App Store access rules the stored states are derived with, raised with
    /// every change to them. 1: a renewal charged early that an immediate upgrade replaced gives
    /// no access; a family-sharing REVOKE ends the chain's periods that run past it. 2: periods
    /// of different offer types (a free trial, then paid months) are not joined.
    public static let appStoreAccessRulesVersion: Int64 = 2
    static let accessRulesCursor = "ledger.access-rules"
    /// Held by the instance that runs the pass (several on one PostgreSQL run it one at a time),
    /// renewed with each page.
    static let accessRulesLease = "ledger.access-rules"
    static let accessRulesLeaseMilliseconds: Int64 = 60_000
    /// What a deleted account's id and store references become in text that kept them.
    static let redactedText = "(deleted account)"
    /// The request hash of an idempotency record whose answer named a deleted account.
    static let deletedRecordPrefix = "deleted:"
}
