import Testing

@testable import LedgerService

@Suite("Change signal")
struct ChangeSignalTests {
    @Test(
        "a commit wakes a waiting reader long before its timeout; a commit it already missed returns at once",
        .timeLimit(.minutes(5)))
    func wakes() async throws {
        let signal = ChangeSignal()
        let seen = signal.version
        async let woken: Void = signal.wait(beyond: seen, timeout: .seconds(600))
        // Notify a parked waiter: only the wake-up ends its wait within the time limit.
        while signal.waiting == 0 { await Task.yield() }
        signal.notify()
        await woken
        #expect(signal.version == seen + 1)
        await signal.wait(beyond: seen, timeout: .seconds(600))  // already past: no wait
    }

    @Test("without a commit the wait ends at its timeout, and cancellation ends it too", .timeLimit(.minutes(5)))
    func timesOut() async throws {
        let signal = ChangeSignal()
        await signal.wait(beyond: signal.version, timeout: .milliseconds(5))
        let waiting = Task { await signal.wait(beyond: signal.version, timeout: .seconds(600)) }
        while signal.waiting == 0 { await Task.yield() }
        waiting.cancel()
        await waiting.value
        #expect(signal.version == 0)
    }
}
