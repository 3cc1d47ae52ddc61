import Model
import Testing

@testable import RPC

/// The heap the services' queues share, and the event loop's timers built on it.
@Suite("Min-heap and timer queue")
struct TimerQueueTests {
    /// A fixed-seed generator, so a failure names the numbers it failed on.
    struct Lcg {
        var state: UInt64
        mutating func next(below bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    @Test("pushed in any order, elements come out least first, duplicates included")
    func sortsWhatIsPushed() {
        var random = Lcg(state: 7)
        for size in [0, 1, 2, 3, 10, 257] {
            let values = (0..<size).map { _ in random.next(below: 50) }
            var heap = MinHeap<Int>()
            for value in values { heap.push(value) }
            #expect(heap.count == size)
            #expect(heap.first == values.min())
            var out: [Int] = []
            while let least = heap.removeFirst() { out.append(least) }
            #expect(out == values.sorted())
            #expect(heap.isEmpty && heap.removeFirst() == nil)
        }
    }

    @Test("pushes between removals keep the order")
    func interleaved() {
        var random = Lcg(state: 11)
        var heap = MinHeap<Int>()
        var shadow: [Int] = []
        for step in 0..<2_000 {
            if step % 3 == 2, let least = heap.removeFirst() {
                #expect(least == shadow.min())
                shadow.remove(at: shadow.firstIndex(of: least)!)
            } else {
                let value = random.next(below: 1_000)
                heap.push(value)
                shadow.append(value)
            }
            #expect(heap.first == shadow.min())
        }
    }

    @Test("removeFirst(if:) takes the least only when it is due; filter and init keep a heap")
    func conditionalAndRebuilt() {
        var heap = MinHeap([9, 4, 7, 1, 8])
        #expect(heap.removeFirst(if: { $0 <= 0 }) == nil)
        #expect(heap.count == 5)
        #expect(heap.removeFirst(if: { $0 <= 4 }) == 1)
        #expect(heap.removeFirst(if: { $0 <= 4 }) == 4)
        #expect(heap.removeFirst(if: { $0 <= 4 }) == nil)
        heap.filter { $0 != 8 }
        heap.push(2)
        #expect(heap.unordered.sorted() == [2, 7, 9])
        var out: [Int] = []
        while let least = heap.removeFirst() { out.append(least) }
        #expect(out == [2, 7, 9])
        heap.push(3)
        heap.removeAll()
        #expect(heap.first == nil && heap.count == 0)
    }

    @Test("timers due at once run earliest first, and at one deadline in the order scheduled")
    func timersInOrder() {
        var timers = TimerQueue()
        let ran = Box()
        for (deadline, name) in [(30, "c"), (10, "a1"), (20, "b"), (10, "a2"), (10, "a3"), (40, "d")] {
            _ = timers.schedule(at: UInt64(deadline)) { ran.names.append(name) }
        }
        #expect(timers.nextDeadline() == 10)
        for action in timers.popDue(now: 9) { action() }
        #expect(ran.names == [])
        for action in timers.popDue(now: 30) { action() }
        #expect(ran.names == ["a1", "a2", "a3", "b", "c"])
        #expect(timers.nextDeadline() == 40)
    }

    @Test("a cancelled timer never runs and no longer sets the next deadline, also after a rebuild")
    func cancelled() {
        var timers = TimerQueue()
        let ran = Box()
        let first = timers.schedule(at: 5) { ran.names.append("first") }
        _ = timers.schedule(at: 6) { ran.names.append("second") }
        timers.cancel(first)
        #expect(timers.nextDeadline() == 6)
        // Enough cancelled timers to make the queue rebuild itself without them.
        var cancelled: [TimerQueue.ID] = []
        for deadline in 100..<3_000 {
            cancelled.append(timers.schedule(at: UInt64(deadline)) { ran.names.append("cancelled") })
        }
        _ = timers.schedule(at: 5_000) { ran.names.append("last") }
        // The first timer, cancelled, was dropped when nextDeadline() came to it.
        #expect(timers.queued == 1 + cancelled.count + 1)
        for id in cancelled { timers.cancel(id) }
        // Rebuilt without the cancelled once they were most of it (2,903 entries otherwise).
        #expect(timers.queued < 1024)
        for action in timers.popDue(now: 10_000) { action() }
        #expect(ran.names == ["second", "last"])
        #expect(timers.nextDeadline() == nil)
    }

    final class Box: @unchecked Sendable {
        var names: [String] = []
    }
}
