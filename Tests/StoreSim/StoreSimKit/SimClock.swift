import Foundation
import Synchronization

/// The simulator's clock: epoch milliseconds that move only when told to, so a test or the
/// demo can live through a year of renewals in seconds and get the same answers every time.
public final class SimClock: Sendable {
    private struct State {
        var milliseconds: Int64
        /// Where the time is written at each move, for services that follow it (`CLOCK_FILE`).
        var file: URL?
    }

    private let state: Mutex<State>

    public init(startMilliseconds: Int64) { state = Mutex(State(milliseconds: startMilliseconds)) }

    public var now: Int64 { state.withLock { $0.milliseconds } }

    /// Writes the time into `path` now and at every move from here on, with the machine's time
    /// (replaced whole, so a reader sees the old pair or the new one): the file services name as
    /// `CLOCK_FILE`.
    public func publish(to path: String) throws {
        try state.withLock { state in
            let file = URL(fileURLWithPath: path)
            try Self.write(state.milliseconds, to: file)
            state.file = file
        }
    }

    /// Moves the clock forward by `offset` milliseconds (never back) and returns the new time.
    @discardableResult
    public func advance(by offset: Int64) -> Int64 {
        state.withLock { state in
            state.milliseconds += max(0, offset)
            if let file = state.file {
                // A file that can no longer be written leaves the followers a step behind; the
                // simulator's own time moves on regardless.
                try? Self.write(state.milliseconds, to: file)
            }
            return state.milliseconds
        }
    }

    /// The time and the machine's wall time now, the pair a `FileClock` runs on from.
    private static func write(_ milliseconds: Int64, to file: URL) throws {
        let machine = Int64(Date().timeIntervalSince1970 * 1000)
        try Data("\(milliseconds) \(machine)\n".utf8).write(to: file, options: .atomic)
    }

    /// An offset written `+<number><unit>` with the unit `d`, `h`, `m` or `s` (`+31d`, `+90m`),
    /// in milliseconds. Throws `SimError` naming what is wrong.
    public static func offset(_ text: String) throws(SimError) -> Int64 {
        guard text.hasPrefix("+"), let unit = text.last, text.count >= 3,
            let number = Int64(text.dropFirst().dropLast()), number >= 0
        else {
            throw SimError(.badRequest, "an offset is written +<number><d|h|m|s>, like +31d; got \"\(text)\"")
        }
        let scale: Int64
        switch unit {
        case "d": scale = 86_400_000
        case "h": scale = 3_600_000
        case "m": scale = 60_000
        case "s": scale = 1000
        default: throw SimError(.badRequest, "the unit of \"\(text)\" is not d, h, m or s")
        }
        guard number <= Int64.max / scale / 2 else {
            throw SimError(.badRequest, "the offset \"\(text)\" is too large")
        }
        return number * scale
    }
}

/// Why the simulator refused a request, with the HTTP status it answers.
public struct SimError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case badRequest
        case notFound
        case conflict
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var status: Int {
        switch kind {
        case .badRequest: 400
        case .notFound: 404
        case .conflict: 409
        }
    }

    public var description: String { message }
}
