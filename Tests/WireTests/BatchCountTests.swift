import Model
import Testing
import Wire

/// Batches of messages that fit in a frame.
@Suite("Batch counts by size")
struct BatchCountTests {
    static func event(_ n: Int, padding: Int) -> Event {
        Event(
            id: "evt_\(n)", type: "subscription.renewed", position: UInt64(n + 1),
            reason: String(repeating: "x", count: padding))
    }

    @Test("as many as fit in the bytes and the count, at least one whatever its size; none of none")
    func counts() {
        let small = (0..<10).map { Self.event($0, padding: 0) }
        let size = small[0].serialized().count + 6
        #expect(small.batchCount(upTo: 100, bytes: 1 << 20) == 10)
        #expect(small.batchCount(upTo: 4, bytes: 1 << 20) == 4)
        #expect(small.batchCount(upTo: 100, bytes: 3 * size) == 3)
        #expect(small.batchCount(upTo: 100, bytes: 3 * size - 1) == 2)
        let huge = [Self.event(0, padding: 100_000), Self.event(1, padding: 0)]
        #expect(huge.batchCount(upTo: 100, bytes: 1000) == 1)
        #expect([Event]().batchCount(upTo: 100, bytes: 1000) == 0)
        #expect(small[7...].batchCount(upTo: 100, bytes: 2 * size) == 2)
    }
}
