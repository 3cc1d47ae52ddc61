import Model
import Observability
import Wire

/// The transaction body of a checked write.
typealias WriteBody<T> = @Sendable (any LedgerTransaction) throws -> T

/// How the ledger's parts reach their database: checked writes with retries, reads, engine
/// errors turned into `LedgerError`, the change signal rung after each commit, and the clock.
struct LedgerTransactions: Sendable {
    let database: any LedgerDatabase
    /// The clock: Unix epoch milliseconds.
    let now: @Sendable () -> Int64
    /// The machine's clock, which leases run on: a lease lasts the seconds it says even where
    /// the ledger decides at a simulated time that jumps (`CLOCK_FILE`).
    let leaseNow: @Sendable () -> Int64
    /// Rung after every commit of this instance, for change-feed readers.
    let changeSignal: ChangeSignal

    /// Checks a write (`prepare` throws what is wrong with the request) and runs it; `completion`
    /// runs once, on the writer thread when the write got that far. The body runs under the
    /// caller's trace (`TraceContext.current`), which the events and inbox entries it records keep.
    func perform<T: Sendable>(
        _ prepare: () throws -> WriteBody<T>, completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let body: WriteBody<T>
        do {
            body = try prepare()
        } catch {
            return completion(.failure(error))
        }
        write(Self.traced(body), attempt: 0, completion: completion)
    }

    /// Runs a write under the caller's trace, as `perform` does.
    func write<T: Sendable>(_ body: @escaping WriteBody<T>) async throws -> T {
        let body = Self.traced(body)
        return try await withCheckedThrowingContinuation { continuation in
            write(body, attempt: 0) { continuation.resume(with: $0) }
        }
    }

    /// `body`, to run on the writer thread under the trace current here.
    private static func traced<T: Sendable>(_ body: @escaping WriteBody<T>) -> WriteBody<T> {
        let trace = TraceContext.current
        return { tx in try TraceContext.$current.withValue(trace) { try body(tx) } }
    }

    /// A write, retried when it lost a race with a concurrent writer (it then finds what the
    /// other wrote, such as the idempotency key), with engine errors turned into statuses.
    func write<T: Sendable>(
        _ body: @escaping WriteBody<T>, attempt: Int, completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        database.write(body) { [changeSignal] result in
            if case .success = result { changeSignal.notify() }
            guard case .failure(let error) = result, !(error is LedgerError) else { return completion(result) }
            switch database.classify(error) {
            case .retry? where attempt < 3: write(body, attempt: attempt + 1, completion: completion)
            case .status(let status)?: completion(.failure(status))
            default: completion(result)
            }
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any LedgerTransaction) throws -> T) async throws -> T {
        do {
            return try await database.read(body)
        } catch let error as LedgerError {
            throw error
        } catch {
            if case .status(let status)? = database.classify(error) { throw status }
            throw error
        }
    }
}
