public import Model
public import Wire

/// An operator's question to the ledger: one typed call of a Ledger method (several pages for
/// `history --all`), printed one line per item, or as the answers' JSON with `--json`.
public enum LedgerCommand: Sendable, Equatable {
    /// Whose audit trail `history` reads.
    public enum HistorySubject: Sendable, Equatable {
        /// An account's events (`--account ACCOUNT_ID`).
        case account(String)
        /// One subscription (`--key STORE/ENV/STORE_ID`).
        case key(SubscriptionKey)
    }

    /// `account ACCOUNT_ID`: Ledger/GetAccount.
    case account(String)
    /// `history`: Ledger/GetHistory, newest first. `pageSize` 0 is the server's default;
    /// `all` follows the page tokens to the end, at most `maximumPages` pages.
    case history(HistorySubject, pageSize: UInt32, all: Bool)
    /// `inbox`: one page of Ledger/ListInbox. A nil status lists pending and failed entries, a
    /// nil store both stores.
    case inbox(status: InboxStatus?, store: Store?, pageSize: UInt32)
    /// `replay STORE NOTIFICATION_ID [--reason TEXT]`: Ledger/ReplayInbox (with a reason, in the
    /// audit trail of the entry's subscription).
    case replay(Store, notificationID: String, reason: String? = nil)
    /// `trace TRACE_ID`: Ledger/FindTrace, the inbox entries and events recorded under a trace.
    case trace(traceID: String)
    /// `events list`: one page of Ledger/ListEvents after a sequence, of some types.
    case events(after: UInt64, limit: UInt32, types: [String])
    /// `events tail`: Ledger/ListEvents again and again, printing each new event; `count`
    /// stops after that many (nil: until interrupted).
    case tail(after: UInt64, types: [String], count: Int?)
    /// `events dead`: Ledger/ListDeadLetters, of one endpoint or all; `all` follows the page
    /// tokens to the end, at most `maximumPages` pages.
    case deadLetters(endpoint: String?, limit: UInt32, all: Bool)
    /// `events test [--account ID]`: Ledger/LogTestEvent.
    case testEvent(account: String?)
    /// `events replay --endpoint NAME --from SEQUENCE | --sequence SEQUENCE [--reason TEXT]`:
    /// Ledger/ReplayDeliveries, after a sequence or of one dead letter.
    case replayDeliveries(endpoint: String, after: UInt64, sequence: UInt64? = nil, reason: String? = nil)
    /// `events verify [--from POSITION]`: whether the log holds the lifecycle events of each
    /// change after `from`, up to the position event computation has covered, exactly once
    /// (`EventLogAudit`): Ledger/GetEventState, GetFeedPosition, every page of ListEvents and
    /// WatchChanges.
    case verifyEvents(from: UInt64?)

    /// How many pages `history --all` and `events dead --all` read before they stop with
    /// `incomplete`.
    public static let maximumPages = 100

    /// The full name of the method the command calls (the first of those `events verify` calls).
    public var method: String {
        let name =
            switch self {
            case .account: "GetAccount"
            case .history: "GetHistory"
            case .inbox: "ListInbox"
            case .replay: "ReplayInbox"
            case .trace: "FindTrace"
            case .events, .tail: "ListEvents"
            case .deadLetters: "ListDeadLetters"
            case .replayDeliveries: "ReplayDeliveries"
            case .testEvent: "LogTestEvent"
            case .verifyEvents: "GetEventState"
            }
        return "subscriptions.ledger.v1.Ledger/\(name)"
    }
}
