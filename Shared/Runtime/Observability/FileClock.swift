public import Dispatch
import Glibc
import Synchronization

/// A clock whose wall time follows a time another program writes into a file: the store
/// simulator writes its own time there (`STORESIM_DIR/clock`) at each move, and services
/// started with `CLOCK_FILE` decide at it, so that a sandbox's thirty days pass in one call.
///
/// The file holds two numbers in decimal, epoch milliseconds: the simulated time and the
/// machine's wall time when it was written (`1767225600000 1796455704530`). Between two moves
/// the time runs on at the machine's pace from there — a simulator's clock stands still between
/// its moves, but the leases, retries and timers of the services must not — and every process
/// reading the file computes the same time. The writer replaces the file whole (a rename), so a
/// reader sees the old pair or the new one. A move to a time this clock already passed is no
/// move: the wall time never goes back.
///
/// Only the wall time follows the file. Deadlines, timeouts and sleeps run on the machine's
/// monotonic clock, and `machineEpochMilliseconds()` stays the machine's, so that tokens and
/// webhook timestamps another party checks against its own clock still pass.
///
/// For a sandbox and a demo only: every read of the time opens the file.
public final class FileClock: ServiceClock {
    public let path: String
    /// The machine's clocks (another clock in tests).
    private let system: any ServiceClock
    /// The file's last pair, and the latest time answered (the floor of the next answer).
    private let state: Mutex<(pair: Pair, answered: Int64)>

    /// A time and the machine's wall time when it was that.
    struct Pair: Equatable {
        var time: Int64
        var machine: Int64
    }

    /// Reads `path` once; throws a message saying what is wrong with it.
    public init(path: String, machine: any ServiceClock = SystemClock()) throws(FileClockError) {
        self.path = path
        system = machine
        guard let first = Self.read(path) else {
            throw FileClockError(
                message:
                    "\(path) does not hold a time and the machine's time when it was written, "
                    + "two numbers of epoch milliseconds (as storesim writes STORESIM_DIR/clock)")
        }
        state = Mutex((first, first.time))
    }

    public func nanoseconds() -> UInt64 { system.nanoseconds() }

    public func epochMilliseconds() -> Int64 {
        // A failed read (the file gone for a moment) leaves the time running from the last pair.
        let read = Self.read(path)
        let machine = system.machineEpochMilliseconds()
        return state.withLock { state in
            if let read { state.pair = read }
            let running = state.pair.time + max(0, machine - state.pair.machine)
            state.answered = max(state.answered, running)
            return state.answered
        }
    }

    public func machineEpochMilliseconds() -> Int64 { system.machineEpochMilliseconds() }

    public func sleep(for duration: Duration) async throws { try await system.sleep(for: duration) }

    public func whenAdvanced(_ wake: @escaping @Sendable () -> Void) {}

    public func wait(_ semaphore: DispatchSemaphore, for duration: Duration) -> Bool {
        system.wait(semaphore, for: duration)
    }

    /// The pair in the file, or nil when it cannot be opened or holds anything but two numbers
    /// of 1 to 18 decimal digits separated by one space (and a newline).
    static func read(_ path: String) -> Pair? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0, count < 64 else { return nil }
        var text = bytes[0..<count]
        if text.last == UInt8(ascii: "\n") { text = text.dropLast() }
        let fields = text.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard fields.count == 2, let time = number(fields[0]), let machine = number(fields[1]) else { return nil }
        return Pair(time: time, machine: machine)
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard (1...18).contains(digits.count) else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// Why a `FileClock` cannot start.
public struct FileClockError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
