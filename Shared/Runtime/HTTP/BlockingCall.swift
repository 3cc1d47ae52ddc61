import Dispatch
public import Observability
import Synchronization

/// Runs async work from a thread that must block for its result: the HTTP server's handler
/// threads, which answer synchronously. Never call it on the cooperative pool.
public enum BlockingCall {
    /// The result of `body`, or nil when it did not finish within `timeout` of `clock`'s time
    /// (it is cancelled then). `body` runs under the caller's `TraceContext.current`.
    public static func run<T: Sendable>(
        timeout: Duration, clock: any ServiceClock = SystemClock(), _ body: @escaping @Sendable () async throws -> T
    ) -> Result<T, any Error>? {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<T, any Error>?>(nil)
        let trace = TraceContext.current
        let task = Task {
            let outcome: Result<T, any Error>
            do {
                outcome = .success(try await TraceContext.$current.withValue(trace) { try await body() })
            } catch {
                outcome = .failure(error)
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        if !clock.wait(done, for: timeout) {
            task.cancel()
            return nil
        }
        return result.withLock { $0 }
    }
}
