internal import CProto
public import Model

/// `subscriptions.ledger.v1.GetHistoryResponse`: one page of events, newest first.
public struct GetHistoryResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.GetHistoryResponse"

    /// The page, newest first.
    public var events: [LifecycleEvent]
    /// The token for the next page; `nil` on the last page.
    public var nextPageToken: String?

    /// A response; fields default to empty and absent.
    public init(events: [LifecycleEvent] = [], nextPageToken: String? = nil) {
        self.events = events
        self.nextPageToken = nextPageToken
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension GetHistoryResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetHistoryResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_history_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            events: ProtoField.messages(m.events, count: m.n_events, "events"),
            nextPageToken: ProtoField.optionalString(m.next_page_token, "next_page_token"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_events = events.count
        c.events = arena.messages(events)
        arena.set(&c.next_page_token, nextPageToken)
    }
}
