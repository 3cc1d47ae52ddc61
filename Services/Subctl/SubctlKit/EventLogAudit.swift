public import Wire

/// Whether the event log holds the lifecycle events of each change in the feed positions
/// (`after`, `through`] exactly once: the events `FeedEvents.events(of:)` gives, matched by id.
///
/// Pure, and fed in two passes: first every event of the log (`record`), then the feed's changes
/// in the range, in order (`check`); `problems` then says what is wrong. Only the log's
/// lifecycle events in the range are held (access and test events are passed over: their ids
/// do not have the `evt_<position>_<index>` shape), and one change at a time.
public struct EventLogAudit: Sendable {
    /// One event id that is missing from the log, logged more than once, or logged but not given
    /// by its change as it stands in the log.
    public struct Problem: Hashable, Sendable {
        /// What is wrong.
        public enum Kind: String, Sendable {
            /// The change gives the id; the log does not hold it.
            case missing
            /// The log holds the id more than once.
            case doubled
            /// The log holds the id, but the change at its position gives no event with it, or
            /// one of another type or position.
            case unexpected
        }

        public var kind: Kind
        /// The feed position the id names.
        public var position: UInt64
        public var id: String
        /// The type the change gives the id; nil when it gives no such event (or no change at
        /// the position was checked).
        public var expectedType: String?
        /// The logged copies this is about, in the log's order: every copy for `doubled`, the
        /// ones that differ from the change's event for `unexpected`, none for `missing`.
        public var logged: [Logged]

        public init(kind: Kind, position: UInt64, id: String, expectedType: String?, logged: [Logged] = []) {
            self.kind = kind
            self.position = position
            self.id = id
            self.expectedType = expectedType
            self.logged = logged
        }
    }

    /// An event as the log holds it: where, of what type, for which feed position.
    public struct Logged: Hashable, Sendable {
        public var sequence: UInt64
        public var type: String
        public var position: UInt64

        public init(sequence: UInt64, type: String, position: UInt64) {
            self.sequence = sequence
            self.type = type
            self.position = position
        }
    }

    /// The range checked: the changes after `after`, through `through`.
    public let after: UInt64
    public let through: UInt64
    /// How many changes `check` compared with the log.
    public private(set) var changesChecked = 0
    /// How many of the log's lifecycle events in the range `record` took in.
    public private(set) var eventsChecked = 0
    /// The logged lifecycle events in the range not yet matched with a change's, by id.
    private var unmatched: [String: [Logged]] = [:]
    /// What the changes checked so far showed.
    private var found: [Problem] = []

    /// An audit of the changes after `after` through `through`.
    public init(after: UInt64, through: UInt64) {
        self.after = after
        self.through = through
    }

    /// Whether the range holds `position`.
    public func covers(_ position: UInt64) -> Bool { position > after && position <= through }

    /// Takes in one event of the log. Call it for every event before the first `check`.
    public mutating func record(_ event: Event) {
        guard let position = FeedEvents.position(ofID: event.id), covers(position) else { return }
        eventsChecked += 1
        unmatched[event.id, default: []].append(
            Logged(sequence: event.sequence, type: event.type, position: event.position))
    }

    /// Compares the lifecycle events of `change` with the log; a change outside the range is
    /// passed over.
    public mutating func check(_ change: Change) {
        guard covers(change.position) else { return }
        changesChecked += 1
        for expected in FeedEvents.events(of: change) {
            let logged = unmatched.removeValue(forKey: expected.id) ?? []
            found += Self.problems(
                id: expected.id, position: change.position, expected: expected, logged: logged)
        }
    }

    /// Everything wrong: the changes' missing, doubled and unexpected events, and the logged
    /// lifecycle events of the range that no change checked gives. By position, then id.
    public var problems: [Problem] {
        let left = unmatched.flatMap { id, logged in
            Self.problems(id: id, position: FeedEvents.position(ofID: id) ?? 0, expected: nil, logged: logged)
        }
        return (found + left).sorted {
            ($0.position, $0.id.count, $0.id, $0.kind.order) < ($1.position, $1.id.count, $1.id, $1.kind.order)
        }
    }

    /// What is wrong with the id `id` of the change at `position`, which gives `expected` under
    /// it (nil: no event), the log holding `logged`.
    private static func problems(id: String, position: UInt64, expected: Event?, logged: [Logged]) -> [Problem] {
        var problems: [Problem] = []
        if logged.isEmpty, let expected {
            problems.append(Problem(kind: .missing, position: position, id: id, expectedType: expected.type))
        }
        if logged.count > 1 {
            problems.append(
                Problem(kind: .doubled, position: position, id: id, expectedType: expected?.type, logged: logged))
        }
        let differing = logged.filter { $0.type != expected?.type || $0.position != expected?.position }
        if !differing.isEmpty {
            problems.append(
                Problem(kind: .unexpected, position: position, id: id, expectedType: expected?.type, logged: differing))
        }
        return problems
    }
}

extension EventLogAudit.Problem.Kind {
    /// Missing, doubled, unexpected: the order of one id's problems.
    fileprivate var order: Int {
        switch self {
        case .missing: 0
        case .doubled: 1
        case .unexpected: 2
        }
    }
}
