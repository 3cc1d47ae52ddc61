import CShims
import Foundation
import Glibc
import Model
import Observability
import Synchronization
import Wire

/// Something registered with an event loop: told which epoll events its descriptor has.
protocol EventLoopHandler: AnyObject {
    func handle(events: UInt32)
}

/// Flushed once per loop iteration after it marked itself dirty: batches writes.
protocol EventLoopFlushable: AnyObject {
    func flush()
}

/// One thread running epoll. Descriptors, timers and handlers registered with it are touched
/// only on that thread; other threads hand it work with `execute`, which wakes it through an
/// eventfd (one write per batch of tasks, however many were queued).
final class EventLoop: @unchecked Sendable {  // mutable state is confined to the loop thread
    let index: Int
    private let epollFD: Int32
    private let wakeFD: Int32
    private let tasks = Mutex<[@Sendable () -> Void]>([])
    private let wakePending = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)
    /// False once the loop has run its last tasks: later ones are dropped.
    private let accepting = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)
    private var threadID: pthread_t?

    // Loop-thread state.
    private var handlers: [UInt64: any EventLoopHandler] = [:]
    private var nextToken: UInt64 = 1
    private var timers = TimerQueue()
    private var dirty: [any EventLoopFlushable] = []
    /// Swapped with the shared task queue and with `dirty`, so neither pass allocates.
    private var runningTasks: [@Sendable () -> Void] = []
    private var flushing: [any EventLoopFlushable] = []
    /// A 64 KiB read buffer shared by every connection of this loop.
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    private static let wakeToken: UInt64 = 0

    /// The time the loop's timers run on.
    let clock: any ServiceClock

    init(index: Int, name: String, clock: any ServiceClock) {
        self.index = index
        self.clock = clock
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(epollFD >= 0 && wakeFD >= 0, "epoll/eventfd: \(Socket.errorText())")
        _ = cshim_epoll_add(epollFD, wakeFD, EPOLLIN.rawValue, Self.wakeToken)
        let thread = Thread { [self] in
            threadID = pthread_self()
            run()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
        // A clock moved by hand (a test's) has the loop look at its timers again.
        clock.whenAdvanced { [weak self] in self?.execute {} }
    }

    deinit {
        close(epollFD)
        close(wakeFD)
        scratch.deallocate()
    }

    /// True on this loop's thread.
    var inLoop: Bool {
        guard let threadID else { return false }
        return pthread_equal(threadID, pthread_self()) != 0
    }

    /// Runs `task` on the loop thread soon, in submission order.
    func execute(_ task: @escaping @Sendable () -> Void) {
        let queued = tasks.withLock { queue -> Bool in
            guard accepting.load(ordering: .acquiring) else { return false }
            queue.append(task)
            return true
        }
        guard queued else { return }
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Stops the loop after the current iteration and waits for its thread to end (called on
    /// the loop thread itself, it does not wait).
    func stopAndWait() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
        // On the loop's own thread the loop ends after this iteration; waiting would deadlock.
        if !inLoop { finished.wait() }
    }

    // MARK: Loop-thread API

    /// Registers `fd` for `events`; returns the token later calls use.
    func register(fd: Int32, events: UInt32, handler: any EventLoopHandler) -> UInt64 {
        let token = nextToken
        nextToken += 1
        handlers[token] = handler
        _ = cshim_epoll_add(epollFD, fd, events, token)
        return token
    }

    func modify(fd: Int32, token: UInt64, events: UInt32) {
        _ = cshim_epoll_mod(epollFD, fd, events, token)
    }

    func deregister(fd: Int32, token: UInt64) {
        _ = cshim_epoll_del(epollFD, fd)
        handlers[token] = nil
    }

    /// Calls `action` on the loop thread at `deadline` (monotonic nanoseconds) unless cancelled.
    @discardableResult
    func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> TimerQueue.ID {
        timers.schedule(at: deadline, action)
    }

    func cancel(timer: TimerQueue.ID) { timers.cancel(timer) }

    /// Asks for `target.flush()` at the end of this iteration.
    func markDirty(_ target: any EventLoopFlushable) { dirty.append(target) }

    // MARK: The loop

    private func run() {
        var tokens = [UInt64](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        while running.load(ordering: .acquiring) {
            var timeout: Int32 = 1000
            if let next = timers.nextDeadline() {
                let now = clock.nanoseconds()
                timeout = next <= now ? 0 : Int32(min(1000, (next - now + 999_999) / 1_000_000))
            }
            let count = tokens.withUnsafeMutableBufferPointer { t in
                events.withUnsafeMutableBufferPointer { e in
                    cshim_epoll_wait(epollFD, t.baseAddress, e.baseAddress, 256, timeout)
                }
            }
            if count > 0 {
                for i in 0..<Int(count) {
                    if tokens[i] == Self.wakeToken {
                        var value: UInt64 = 0
                        _ = read(wakeFD, &value, 8)
                        continue
                    }
                    handlers[tokens[i]]?.handle(events: events[i])
                }
            }
            for action in timers.popDue(now: clock.nanoseconds()) { action() }
            runTasks()
            flushDirty()
        }
        // Drain what was queued so nothing waits forever on a stopped loop, then drop what
        // holds references back to the loop (timers, handlers) so it can be freed.
        wakePending.store(true, ordering: .releasing)
        runTasks()
        flushDirty()
        tasks.withLock { _ in accepting.store(false, ordering: .releasing) }
        wakePending.store(true, ordering: .releasing)
        runTasks()
        timers.removeAll()
        handlers.removeAll()
        dirty.removeAll()
        finished.signal()
    }

    private func runTasks() {
        guard wakePending.load(ordering: .acquiring) else { return }
        wakePending.store(false, ordering: .releasing)
        var batch = runningTasks
        runningTasks = []
        tasks.withLock { swap(&$0, &batch) }
        for task in batch { task() }
        batch.removeAll(keepingCapacity: true)
        runningTasks = batch
    }

    private func flushDirty() {
        while !dirty.isEmpty {
            swap(&dirty, &flushing)
            for target in flushing { target.flush() }
            flushing.removeAll(keepingCapacity: true)
        }
    }
}

/// Timers by deadline, and at one deadline in the order they were scheduled; cancelled timers
/// are dropped lazily when they come due.
struct TimerQueue {
    typealias ID = UInt64

    private struct Timer: Comparable {
        let deadline: UInt64
        let id: ID
        static func < (a: Timer, b: Timer) -> Bool { (a.deadline, a.id) < (b.deadline, b.id) }
    }

    private var heap = MinHeap<Timer>()
    private var actions: [ID: () -> Void] = [:]
    private var nextID: ID = 1

    /// Entries held, cancelled ones not yet dropped included.
    var queued: Int { heap.count }

    mutating func nextDeadline() -> UInt64? {
        while let top = heap.first, actions[top.id] == nil { heap.removeFirst() }
        return heap.first?.deadline
    }

    mutating func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> ID {
        let id = nextID
        nextID += 1
        actions[id] = action
        heap.push(Timer(deadline: deadline, id: id))
        return id
    }

    mutating func cancel(_ id: ID) {
        actions[id] = nil
        // Cancelled entries wait in the heap until due; rebuild once they are most of it, so
        // many calls with long deadlines that finish early do not pile up.
        if heap.count > 1024 && heap.count > 4 * actions.count {
            let live = actions
            heap.filter { live[$0.id] != nil }
        }
    }

    /// Drops every timer (a stopped loop).
    mutating func removeAll() {
        heap.removeAll()
        actions.removeAll()
    }

    /// Removes and returns the actions due at `now`, earliest first. They run after the queue
    /// is no longer being modified, so an action may schedule more timers.
    mutating func popDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.removeFirst(if: { $0.deadline <= now }) {
            if let action = actions.removeValue(forKey: top.id) { due.append(action) }
        }
        return due
    }
}

/// A fixed set of event loops; connections are spread over them round-robin.
final class EventLoopGroup: Sendable {
    let loops: [EventLoop]
    private let cursor = Atomic<Int>(0)

    init(count: Int, name: String, clock: any ServiceClock) {
        loops = (0..<max(1, count)).map { EventLoop(index: $0, name: "\(name)-\($0)", clock: clock) }
    }

    func next() -> EventLoop {
        loops[cursor.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }

    func shutdown() { for loop in loops { loop.stopAndWait() } }
}
