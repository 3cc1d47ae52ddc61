internal import CProto
public import Model

/// `subscriptions.ledger.v1.Change`: one committed change of the ledger's change feed, in one
/// total order by `position`.
public struct Change: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.Change"

    /// The change-feed position of the commit.
    public var position: UInt64
    /// When the change committed, epoch milliseconds; `nil` when absent (the wire's 0).
    public var committedTimeMilliseconds: Int64?
    /// `nil` for unspecified; `.unknown(number)` for a kind this version does not know.
    public var kind: ChangeKind?
    /// The subscription's state after the change.
    public var subscription: Subscription?
    /// The account link the change concerns.
    public var link: AccountLink?
    /// The events recorded in the same commit; at most 16.
    public var events: [LifecycleEvent]

    /// A change; fields default to 0, absent and empty.
    public init(
        position: UInt64 = 0, committedTimeMilliseconds: Int64? = nil, kind: ChangeKind? = nil,
        subscription: Subscription? = nil, link: AccountLink? = nil, events: [LifecycleEvent] = []
    ) {
        self.position = position
        self.committedTimeMilliseconds = committedTimeMilliseconds
        self.kind = kind
        self.subscription = subscription
        self.link = link
        self.events = events
    }

    /// Decodes a change; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension Change: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__Change

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__change__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            position: m.position,
            committedTimeMilliseconds: ProtoField.nonZero(m.committed_time_ms),
            kind: ProtoField.enumValue(m.kind.rawValue, "kind"),
            subscription: ProtoField.message(m.subscription, "subscription"),
            link: ProtoField.message(m.link, "link"),
            events: ProtoField.messages(m.events, count: m.n_events, "events"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.position = position
        c.committed_time_ms = committedTimeMilliseconds ?? 0
        c.kind = .init(rawValue: ProtoField.number(kind))
        c.subscription = subscription?.cMessage(in: arena)
        c.link = link?.cMessage(in: arena)
        c.n_events = events.count
        c.events = arena.messages(events)
    }
}
