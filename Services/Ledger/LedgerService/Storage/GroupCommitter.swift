import Dispatch
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
            _ continuation: CheckedContinuation<T, any Error>
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
                    continuation.resume(throwing: commitError)
                } else {
                    continuation.resume(with: outcome ?? .failure(LedgerStorageError.closed))
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
    private let queue: DispatchQueue
    private let maxBatch: Int
    private let transaction: Transaction

    init(queue: DispatchQueue, maxBatch: Int, transaction: @escaping Transaction) {
        self.queue = queue
        self.maxBatch = max(1, maxBatch)
        self.transaction = transaction
    }

    func submit<T: Sendable>(_ work: @escaping @Sendable (any LedgerTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job(work, continuation)
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
