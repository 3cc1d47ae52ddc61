import Dispatch
public import Observability
import Synchronization

/// Batches concurrent writes into one transaction and one durable commit.
///
/// Writers queue their bodies; whenever the committer thread is free it takes everything
/// queued (up to `maxBatch`), runs the bodies one after another in one transaction, commits
/// once, and only then answers each writer: a body's result is released only after the commit
/// that contains it is durable.
///
/// Bodies rarely throw, so a batch first runs without savepoints (a savepoint per body costs
/// SQLite a sub-journal and PostgreSQL two statements). When a body throws, the transaction is
/// rolled back and the batch runs again with each body in a savepoint of its own: the one that
/// throws is rolled back to it and its writer gets the error; the others commit. Bodies must
/// therefore have no effect outside the transaction. When the commit itself fails (disk full,
/// I/O error), every writer of the batch gets that error and nothing of the batch is acknowledged.
final class GroupCommitter: Sendable {
    /// Runs a batch inside one transaction: `run(tx)` executes every job's savepoint.
    typealias Transaction = @Sendable (_ run: (any LedgerTransaction) throws -> Void) throws -> Void

    private final class Job: @unchecked Sendable {  // touched by the committer thread only, then handed back once
        /// Runs the work. Not `isolated`, a failure is recorded and rethrown (the transaction
        /// is then rolled back); `isolated`, the work runs in a savepoint that a failure is
        /// rolled back to, and only a failure of the engine's transaction itself is rethrown.
        let body: (any LedgerTransaction, _ isolated: Bool) throws -> Void
        /// Forgets the outcome of a run whose transaction was rolled back.
        let reset: () -> Void
        let complete: (_ commitError: (any Error)?) -> Void
        private let failedCheck: () -> Bool
        var failed: Bool { failedCheck() }

        init<T: Sendable>(
            _ work: @escaping @Sendable (any LedgerTransaction) throws -> T,
            _ completion: @escaping @Sendable (Result<T, any Error>) -> Void
        ) {
            var outcome: Result<T, any Error>?
            body = { tx, isolated in
                // Not isolated, what a job holds back goes out with the next job's first read or
                // with the commit: a batch costs a round trip per read, not one more per job. A
                // statement's error may then surface in a later job or at the commit; either
                // way the batch runs again isolated, where each job flushes its own statements
                // before it counts as done, so every error there is its own.
                if !isolated {
                    do {
                        let value = try work(tx)
                        outcome = .success(value)
                    } catch {
                        outcome = .failure(error)
                        throw error
                    }
                    return
                }
                do {
                    try tx.enqueue("SAVEPOINT job", [])
                    let value = try work(tx)
                    try tx.enqueue("RELEASE SAVEPOINT job", [])
                    try tx.flush()
                    outcome = .success(value)
                } catch {
                    outcome = .failure(error)
                    // The engine may have ended the whole transaction (SQLite after a full
                    // disk): then nothing of this batch may commit, job by job or at all.
                    guard tx.isOpen else { throw error }
                    // What was never sent needs no undoing; when even the savepoint was not
                    // sent, nothing of this job reached the database (what came before it,
                    // such as the batch's BEGIN and lock, stays to go out with the next job).
                    guard !tx.discardPending(from: "SAVEPOINT job") else { return }
                    _ = try? tx.query("ROLLBACK TO SAVEPOINT job")
                    _ = try? tx.query("RELEASE SAVEPOINT job")
                }
            }
            reset = { outcome = nil }
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
    /// Whether a failed commit may be a statement's own failure, not the engine's: for an
    /// engine whose transactions hold statements back (`enqueue`), any error but a lost
    /// connection; for one that runs each statement at once, none.
    private let isStatementFailure: @Sendable (any Error) -> Bool

    init(
        queue: DispatchQueue, maxBatch: Int, counters: CommitCounters,
        isStatementFailure: @escaping @Sendable (any Error) -> Bool = { _ in false },
        transaction: @escaping Transaction
    ) {
        self.queue = queue
        self.counters = counters
        self.maxBatch = max(1, maxBatch)
        self.isStatementFailure = isStatementFailure
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
            // Whether the engine failed (rather than a write, whose own error is its outcome).
            var engineFailed = false
            do {
                try transaction { tx in for job in batch { try job.body(tx, false) } }
            } catch {
                commitError = error
                // A failed commit may be a job's held-back statement (run again isolated to
                // find out) unless the engine says the outcome is unknown.
                engineFailed = !batch.contains(where: \.failed) && !isStatementFailure(error)
                if batch.count > 1 && !engineFailed {
                    // One write failed and took the others' transaction with it: run them
                    // again, each in a savepoint, so the others still commit.
                    for job in batch { job.reset() }
                    do {
                        try transaction { tx in for job in batch { try job.body(tx, true) } }
                        commitError = nil
                    } catch {
                        commitError = error
                        engineFailed = true
                    }
                }
            }
            // A statement's failure found at the commit of a lone job failed that job.
            let committed = commitError == nil ? batch.filter { !$0.failed }.count : 0
            if engineFailed {
                counters.failures.increment()
            } else if committed > 0 {
                counters.commits.increment()
                counters.writes.increment(by: committed)
            }
            // A job that failed reports its own error (a rollback followed from it); the others
            // get the commit's.
            for job in batch { job.complete(job.failed ? nil : commitError) }
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
