import Crypto
import Foundation
public import Model
import Wire

/// The ledger over a `LedgerDatabase`, in parts by what each owns: the inbox, verified states
/// (idempotency, store-time ordering, periods), accounts (links under a transfer policy, grants,
/// merges, deletions, history), the event log and webhook deliveries, cursors and leases, and
/// the change feed. Every method validates its input first; a refused request writes nothing.
/// The parts share the database (through `LedgerTransactions`) and the clock.
public struct Ledger: Sendable {
    public let database: any LedgerDatabase
    /// The policy for a second account's claim when the request names none.
    public let defaultTransferPolicy: TransferPolicy
    /// The clock, injectable for tests: Unix epoch milliseconds.
    public let now: @Sendable () -> Int64
    let transactions: LedgerTransactions
    public let inbox: LedgerInbox
    public let verifiedStates: LedgerVerifiedStates
    public let accounts: LedgerAccounts
    public let eventLog: LedgerEventLog
    public let cursors: LedgerCursors
    public let changeFeed: LedgerChangeFeed

    public init(
        database: any LedgerDatabase, defaultTransferPolicy: TransferPolicy = .transfer,
        now: (@Sendable () -> Int64)? = nil, leaseNow: (@Sendable () -> Int64)? = nil
    ) {
        self.database = database
        self.defaultTransferPolicy = defaultTransferPolicy
        let now = now ?? { Int64(Date().timeIntervalSince1970 * 1000) }
        self.now = now
        let transactions = LedgerTransactions(
            database: database, now: now, leaseNow: leaseNow ?? now, changeSignal: ChangeSignal())
        self.transactions = transactions
        inbox = LedgerInbox(transactions: transactions)
        verifiedStates = LedgerVerifiedStates(transactions: transactions)
        accounts = LedgerAccounts(transactions: transactions, defaultTransferPolicy: defaultTransferPolicy)
        eventLog = LedgerEventLog(transactions: transactions)
        cursors = LedgerCursors(transactions: transactions)
        changeFeed = LedgerChangeFeed(transactions: transactions)
    }

    // MARK: Limits

    static let maxIDBytes = 256
    static let maxPayloadBytes = 64 * 1024
    static let maxEvents = 16
    static let maxPageSize: UInt32 = 500
    static let defaultPageSize: UInt32 = 100
    /// A page ends early, with a next-page token, once its entries reach this many bytes, so a
    /// reply always fits in a frame (the RPC maximum is 1 MiB by default): at least one entry
    /// is always given.
    static let maxPageBytes = 256 * 1024
    /// A snapshot chunk ends once its states reach this many bytes (or its count), so that one
    /// of large states (hundreds of periods each) still fits in a frame.
    public static let maxSnapshotChunkBytes = 512 * 1024
    static let maxAccountRows = 1000
    static let maxCursorNameBytes = 128
    /// Periods per request, and in a subscription's state (the oldest beyond it stay in the
    /// periods table only).
    static let maxPeriods = 256
    static let maxStoredPeriodRows = 1000
    /// Periods with their raw data in a `GetSubscription` answer (about 3 KiB each, well inside
    /// a frame).
    static let maxAnsweredPeriods = 100
}

/// Where an inbox listing continues: after this entry in (received, store, id) order.
struct InboxCursor {
    let receivedMilliseconds: Int64
    let store: Int64
    let notificationID: String

    init(receivedMilliseconds: Int64, store: Int64, notificationID: String) {
        self.receivedMilliseconds = receivedMilliseconds
        self.store = store
        self.notificationID = notificationID
    }

    init(token: String) throws {
        let parts = token.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let received = Int64(parts[0]), let store = Int64(parts[1]) else {
            throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
        }
        receivedMilliseconds = received
        self.store = store
        notificationID = String(parts[2])
    }

    var token: String { "\(receivedMilliseconds):\(store):\(notificationID)" }
}

/// Where a listing ordered by a number and a text continues: after this pair. A subscription
/// listing's is (environment, store id); a dead-letter listing's (sequence, endpoint), ordered
/// by endpoint first.
struct PairCursor: Sendable, Equatable {
    let number: Int64
    let text: String

    init(number: Int64, text: String) {
        self.number = number
        self.text = text
    }

    init(token: String) throws {
        let parts = token.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let number = Int64(parts[0]) else {
            throw LedgerError.invalidArgument("page_token \"\(token.prefix(40))\" is not one this ledger issued")
        }
        self.number = number
        text = String(parts[1])
    }

    var token: String { "\(number):\(text)" }
}
