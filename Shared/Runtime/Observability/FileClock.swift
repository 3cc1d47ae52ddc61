public import Dispatch
import Glibc
import Synchronization

/// A clock whose wall time follows a time another program writes into a file: the store
/// simulator writes its own time there (`STORESIM_DIR/clock`) at each move, and services
/// started with `CLOCK_FILE` decide at it, so that a sandbox's thirty days pass in one call.
/// The file holds the time in epoch milliseconds as decimal digits; the writer replaces it
/// whole (a rename), so a reader sees the old time or the new one.
///
/// Between two moves the time runs on at the machine's pace from the last time written (a
/// simulator's clock stands still between its moves; leases, retries and timers of the
/// services must not). A move to a time the running clock already passed is taken as no move:
/// the wall time never goes back.
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

    private struct State {
        /// The last time read from the file.
        var written: Int64
        /// The wall time at `base` on the monotonic clock; it runs on from there.
        var start: Int64
        var base: UInt64
    }

    private let state: Mutex<State>

    /// Reads `path` once; throws a message saying what is wrong with it.
    public init(path: String, machine: any ServiceClock = SystemClock()) throws(FileClockError) {
        self.path = path
        system = machine
        guard let first = Self.read(path) else {
            throw FileClockError(
                message: "cannot read a time in epoch milliseconds (decimal digits) from \(path)")
        }
        state = Mutex(State(written: first, start: first, base: system.nanoseconds()))
    }

    public func nanoseconds() -> UInt64 { system.nanoseconds() }

    public func epochMilliseconds() -> Int64 {
        // A failed read (the file gone for a moment) leaves the time running from the last one.
        let read = Self.read(path)
        let monotonic = system.nanoseconds()
        return state.withLock { state in
            let running = state.start + Int64((monotonic.subtractingClamped(state.base)) / 1_000_000)
            guard let read, read != state.written else { return running }
            state.written = read
            state.start = max(read, running)
            state.base = monotonic
            return state.start
        }
    }

    public func machineEpochMilliseconds() -> Int64 { system.machineEpochMilliseconds() }

    public func sleep(for duration: Duration) async throws { try await system.sleep(for: duration) }

    public func whenAdvanced(_ wake: @escaping @Sendable () -> Void) {}

    public func wait(_ semaphore: DispatchSemaphore, for duration: Duration) -> Bool {
        system.wait(semaphore, for: duration)
    }

    /// The time in the file, or nil when it cannot be opened or holds anything but 1 to 18
    /// decimal digits (and a newline).
    static func read(_ path: String) -> Int64? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        var digits = bytes[0..<count]
        while let last = digits.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
            digits = digits.dropLast()
        }
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
