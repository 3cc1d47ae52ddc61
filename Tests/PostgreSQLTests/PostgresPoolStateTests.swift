import Testing

@testable import PostgreSQL

@Suite("PostgreSQL pool bookkeeping")
struct PostgresPoolStateTests {
    typealias State = PostgresPoolState<String, String>

    @Test("idle slots are handed out, then callers queue and are served oldest first")
    func fifo() {
        var state = State(slots: ["s1"])
        guard case .ready("s1") = state.checkout(id: 1, waiter: "a") else {
            Issue.record("expected s1")
            return
        }
        guard case .queued = state.checkout(id: 2, waiter: "b"), case .queued = state.checkout(id: 3, waiter: "c")
        else {
            Issue.record("expected queued")
            return
        }
        guard case .handOver("b") = state.checkin("s1") else {
            Issue.record("expected b first")
            return
        }
        guard case .handOver("c") = state.checkin("s1") else {
            Issue.record("expected c next")
            return
        }
        guard case .idle = state.checkin("s1"), case .ready("s1") = state.checkout(id: 4, waiter: "d") else {
            Issue.record("expected the slot back in the idle list")
            return
        }
    }

    @Test("a cancelled waiter leaves the queue and is not served")
    func cancel() {
        var state = State(slots: ["s1"])
        _ = state.checkout(id: 1, waiter: "a")
        _ = state.checkout(id: 2, waiter: "b")
        _ = state.checkout(id: 3, waiter: "c")
        #expect(state.cancel(id: 2) == "b")
        #expect(state.cancel(id: 2) == nil)
        guard case .handOver("c") = state.checkin("s1") else {
            Issue.record("expected c")
            return
        }
    }

    @Test("closing fails the waiters, retires idle slots now and busy ones when returned")
    func close() {
        var state = State(slots: ["s1", "s2"])
        _ = state.checkout(id: 1, waiter: "a")
        _ = state.checkout(id: 2, waiter: "b")
        _ = state.checkout(id: 3, waiter: "c")
        _ = state.checkin("s2")  // goes to "c"
        _ = state.checkout(id: 4, waiter: "d")
        let (waiters, idle) = state.close()
        #expect(waiters == ["d"])
        #expect(idle.isEmpty)
        guard case .retire = state.checkin("s1"), case .closed = state.checkout(id: 5, waiter: "e") else {
            Issue.record("expected a closed pool")
            return
        }
        #expect(state.close().waiters.isEmpty)
    }
}
