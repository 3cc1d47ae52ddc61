import Dispatch
import RPC
import Testing

/// The clock tests move by hand: time passes only when advanced, sleepers wake in the order
/// of their ends, and a cancelled sleep ends at once, also when cancelled before it began.
@Suite("Manual clock")
struct ManualClockTests {
    @Test("sleepers wake when the clock reaches their ends, earliest first; both readings move")
    func advance() async throws {
        let clock = ManualClock(nanoseconds: 5_000, epochMilliseconds: 1_000)
        let woke = Recorder<Int>()
        let sleepers = (1...3).reversed().map { index in
            Task {
                try await clock.sleep(for: .milliseconds(index * 10))
                woke.add(index)
            }
        }
        while clock.sleepers < 3 { await Task.yield() }
        clock.advance(by: .milliseconds(15))
        _ = try await sleepers[2].value
        #expect(woke.all == [1])
        #expect(clock.nanoseconds() == 15_005_000 && clock.epochMilliseconds() == 1_015)
        clock.advance(by: .milliseconds(15))
        for sleeper in sleepers { _ = try await sleeper.value }
        #expect(woke.all == [1, 2, 3])
        #expect(clock.sleepers == 0)
    }

    @Test("a cancelled sleep throws, whether it was queued or not yet")
    func cancellation() async {
        let clock = ManualClock()
        let queued = Task { try await clock.sleep(for: .seconds(1)) }
        while clock.sleepers < 1 { await Task.yield() }
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(clock.sleepers == 0)
    }

    @Test("a blocking wait ends when signalled, or when the clock passes its end")
    func blockingWait() async {
        let clock = ManualClock()
        let signalled = DispatchSemaphore(value: 0)
        signalled.signal()
        #expect(clock.wait(signalled, for: .seconds(1)))
        let never = DispatchSemaphore(value: 0)
        let waited = Task.detached { clock.wait(never, for: .milliseconds(100)) }
        while clock.sleepers < 1 { await Task.yield() }
        clock.advance(by: .milliseconds(99))
        #expect(clock.sleepers == 1)
        clock.advance(by: .milliseconds(1))
        #expect(await waited.value == false)
    }
}
