import Dispatch
import Synchronization

/// A bounded pool of connections to one server, for use from async code.
///
/// Holds at most `size` connections, each opened on first use and reopened when it broke. Each
/// connection has its own serial dispatch queue, and every blocking libpq call (connecting
/// included) runs there, never on Swift's cooperative pool. Callers beyond `size` wait, first
/// come first served, without polling. Call `close()` when done.
public final class PostgresPool: Sendable {
    private typealias Waiter = CheckedContinuation<Slot, any Error>

    /// How many connections the pool may hold.
    public let size: Int
    private let url: PostgresURL
    private let statementTimeout: Duration?
    private let onConnect: PostgresConnection.OnConnect?
    private let state: Mutex<PostgresPoolState<Slot, Waiter>>
    private let nextWaiterID = Atomic(0)

    /// Makes a pool; no connection is opened until the first `withConnection`.
    ///
    /// - Parameters:
    ///   - url: as for `PostgresConnection.init(url:statementTimeout:onConnect:)`; checked here.
    ///   - size: the most connections open at once (at least 1).
    ///   - statementTimeout: applied to every connection.
    ///   - onConnect: run on every connection the pool opens, before its first use (for session
    ///     settings such as `search_path`); what it throws fails that `withConnection`.
    /// - Throws: `PostgresError` `.invalidURL`, without the password.
    public init(
        url: String, size: Int, statementTimeout: Duration? = nil, onConnect: PostgresConnection.OnConnect? = nil
    ) throws(PostgresError) {
        precondition(size > 0, "a pool needs at least one connection")
        self.url = try PostgresURL(url)
        self.size = size
        self.statementTimeout = statementTimeout
        self.onConnect = onConnect
        state = Mutex(PostgresPoolState(slots: (0..<size).map { Slot(label: "postgres-pool-\($0)") }))
    }

    /// `host:port/dbname` of the server, for logs.
    public var endpoint: String { url.description }

    /// Runs `body` with a connection of its own, on that connection's queue, and returns what it
    /// returns. Waits while all connections are in use.
    ///
    /// A connection that broke, or that `body` left inside a transaction, is closed afterwards
    /// and replaced on next use. Cancelling the task stops a wait, not a running `body`.
    /// - Throws: what `body` throws; `PostgresError` when connecting fails (`.connection`) or the
    ///   pool is closed (`.poolClosed`); `CancellationError` when cancelled while waiting.
    public func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        let slot = try await checkout()
        defer { checkin(slot) }
        return try await withCheckedThrowingContinuation { continuation in
            slot.queue.async { [url, statementTimeout, onConnect] in
                continuation.resume(
                    with: Result {
                        try slot.run(url: url, statementTimeout: statementTimeout, onConnect: onConnect, body)
                    })
            }
        }
    }

    /// Fails every waiting and later `withConnection`, and closes each connection once it is idle.
    public func close() {
        let (waiters, idle) = state.withLock { $0.close() }
        for waiter in waiters { waiter.resume(throwing: closedError) }
        for slot in idle { slot.retire() }
    }

    private var closedError: PostgresError {
        PostgresError(code: .poolClosed, message: "the pool for \(url) is closed")
    }

    private func checkout() async throws -> Slot {
        try Task.checkCancellation()
        let id = nextWaiterID.wrappingAdd(1, ordering: .relaxed).oldValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                switch state.withLock({ $0.checkout(id: id, waiter: continuation) }) {
                case .ready(let slot): continuation.resume(returning: slot)
                case .closed: continuation.resume(throwing: closedError)
                // A cancellation that came before the waiter was queued found nothing to remove.
                case .queued: if Task.isCancelled { cancelWaiter(id) }
                }
            }
        } onCancel: {
            cancelWaiter(id)
        }
    }

    private func cancelWaiter(_ id: Int) {
        state.withLock { $0.cancel(id: id) }?.resume(throwing: CancellationError())
    }

    private func checkin(_ slot: Slot) {
        switch state.withLock({ $0.checkin(slot) }) {
        case .handOver(let waiter): waiter.resume(returning: slot)
        case .idle: break
        case .retire: slot.retire()
        }
    }

    /// One pooled connection (nil until first used or after it broke) and the queue its calls run on.
    private final class Slot: Sendable {
        let queue: DispatchQueue
        private let connection = Mutex<PostgresConnection?>(nil)

        init(label: String) { queue = DispatchQueue(label: label) }

        /// Runs `body` on the connection, opening it first when missing or broken and dropping it
        /// when `body` leaves it broken or inside a transaction. Call on `queue`.
        func run<T: Sendable>(
            url: PostgresURL, statementTimeout: Duration?, onConnect: PostgresConnection.OnConnect?,
            _ body: (PostgresConnection) throws -> T
        ) throws -> T {
            try connection.withLock { connection in
                if connection?.isHealthy != true {
                    connection = nil
                    connection = try PostgresConnection(
                        url: url, statementTimeout: statementTimeout, onConnect: onConnect)
                }
                let current = connection!
                defer { if !current.isHealthy || current.isInTransaction { connection = nil } }
                return try body(current)
            }
        }

        /// Closes the connection on `queue`, where PQfinish may block.
        func retire() { queue.async { self.connection.withLock { $0 = nil } } }
    }
}
