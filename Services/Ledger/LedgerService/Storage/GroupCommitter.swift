import Dispatch
public import Observability
import Synchronization

/// Batches concurrent writes into one transaction and one durable commit.
///
/// Writers queue their bodies; whenever the committer thread is free it takes everything
/// queued (up to `maxBatch`), runs each body in a savepoint of one transaction, commits once,
/// and only then answers each writer: a body's result is released only after the commit that
/// contains it is durable. A body that throws is rolled back to its savepoint and its writer
/// gets the error; the others commit. When the commit itself fails (disk full, I/O error),
/// every writer of the batch gets that error and nothing of the batch is acknowledged.
final class GroupCommitter: Sendable {
    /// Runs a batch inside one transaction: `run(tx)` executes every job's savepoint.
    typealias Transaction = @Sendable (_ run: (any LedgerTransaction) throws -> Void) throws -> Void

    private final class Job: @unchecked Sendable {  // touched by the committer thread only, then handed back once
        /// Runs the work; alone in its batch it needs no savepoint (a failure rolls back the
        /// whole transaction, which then holds nothing else), so it rethrows instead.
        let body: (any LedgerTransaction, _ alone: Bool) throws -> Void
        let complete: (_ commitError: (any Error)?) -> Void
        private let failedCheck: () -> Bool
        var failed: Bool { failedCheck() }

        init<T: Sendable>(
            _ work: @escaping @Sendable (any LedgerTransaction) throws -> T,
            _ completion: @escaping @Sendable (Result<T, any Error>) -> Void
        ) {
            var outcome: Result<T, any Error>?
            body = { tx, alone in
                if alone {
                    do {
                        outcome = .success(try work(tx))
                    } catch {
                        outcome = .failure(error)
                        throw error
                    }
                    return
                }
                do {
                    try tx.query("SAVEPOINT job")
                    let value = try work(tx)
                    try tx.query("RELEASE SAVEPOINT job")
                    outcome = .success(value)
                } catch {
                    outcome = .failure(error)
                    // The engine may have ended the whole transaction (SQLite after a full
                    // disk): then nothing of this batch may commit, job by job or at all.
                    guard tx.isOpen else { throw error }
                    _ = try? tx.query("ROLLBACK TO SAVEPOINT job")
                    _ = try? tx.query("RELEASE SAVEPOINT job")
                }
            }
            failedCheck = {
                if case .failure? = outcome { return true }
                return false
            }
            complete = { commitError in
                if let commitError {
                    completion(.failure(commitError))
                } else {
                    completion(outcome ?? .failure(LedgerStorageError.closed))
                }
            }
        }
    }

    private struct State {
        var queue: [Job] = []
        var committing = false
        var closed = false
    }

    private let state = Mutex(State())
    private let counters: CommitCounters
    private let queue: DispatchQueue
    private let maxBatch: Int
    private let transaction: Transaction

    init(queue: DispatchQueue, maxBatch: Int, counters: CommitCounters, transaction: @escaping Transaction) {
        self.queue = queue
        self.counters = counters
        self.maxBatch = max(1, maxBatch)
        self.transaction = transaction
    }

    /// Queues `work`; `completion` runs on the committer thread once the batch holding it is
    /// durable (or failed).
    func submit<T: Sendable>(
        _ work: @escaping @Sendable (any LedgerTransaction) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let job = Job(work, completion)
        let start = state.withLock { state -> Bool? in
            if state.closed { return nil }
            state.queue.append(job)
            if state.committing { return false }
            state.committing = true
            return true
        }
        switch start {
        case nil: job.complete(LedgerStorageError.closed)
        case true?: queue.async { self.drain() }
        case false?: break
        }
    }

    func close() { state.withLock { $0.closed = true } }

    private func drain() {
        while true {
            let batch = state.withLock { state -> [Job] in
                let batch = Array(state.queue.prefix(maxBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.committing = false }
                return batch
            }
            if batch.isEmpty { return }
            var commitError: (any Error)?
            do {
                try transaction { tx in for job in batch { try job.body(tx, batch.count == 1) } }
            } catch {
                commitError = error
            }
            if commitError == nil {
                counters.commits.increment()
                counters.writes.increment(by: batch.count)
            } else {
                counters.failures.increment()
            }
            // A lone job that failed reports its own error (the rollback followed from it).
            for job in batch { job.complete(batch.count == 1 && job.failed ? nil : commitError) }
        }
    }
}

/// Storage failures that are not the engine's own errors.
public enum LedgerStorageError: Error, Sendable, CustomStringConvertible {
    case closed
    case corrupt(String)

    public var description: String {
        switch self {
        case .closed: "the ledger database is closed"
        case .corrupt(let what): "stored data is unreadable: \(what)"
        }
    }
}

/// The group committer's counters; writes ÷ commits is the mean batch. Exported by the ledger
/// as `ledger_commits_total`, `ledger_committed_writes_total` and `ledger_failed_commits_total`.
public struct CommitCounters: Sendable {
    public let commits: Counter
    public let writes: Counter
    public let failures: Counter

    /// Counters registered in `registry`, or free-standing ones without it.
    public init(registry: MetricsRegistry? = nil) {
        guard let registry else {
            (commits, writes, failures) = (Counter(), Counter(), Counter())
            return
        }
        commits = registry.counter("ledger_commits_total", help: "Write transactions committed (one sync each).")
        writes = registry.counter(
            "ledger_committed_writes_total", help: "Writes acknowledged by those commits (group commit batches them).")
        failures = registry.counter(
            "ledger_failed_commits_total",
            help: "Write batches whose commit failed; none of their writes was acknowledged.")
    }
}
