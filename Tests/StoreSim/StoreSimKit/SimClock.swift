import Synchronization

/// The simulator's clock: epoch milliseconds that move only when told to, so a test or the
/// demo can live through a year of renewals in seconds and get the same answers every time.
public final class SimClock: Sendable {
    private let milliseconds: Mutex<Int64>

    public init(startMilliseconds: Int64) { milliseconds = Mutex(startMilliseconds) }

    public var now: Int64 { milliseconds.withLock { $0 } }

    /// Moves the clock forward by `offset` milliseconds (never back) and returns the new time.
    @discardableResult
    public func advance(by offset: Int64) -> Int64 {
        milliseconds.withLock { value in
            value += max(0, offset)
            return value
        }
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
