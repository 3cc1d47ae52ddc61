internal import CProto
public import Model

/// `subscriptions.ledger.v1.ListSubscriptionsResponse`.
public struct ListSubscriptionsResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.ledger.v1.ListSubscriptionsResponse"

    public var subscriptions: [Subscription]
    /// Set when there are more; pass it back as `page_token`.
    public var nextPageToken: String?

    public init(subscriptions: [Subscription] = [], nextPageToken: String? = nil) {
        self.subscriptions = subscriptions
        self.nextPageToken = nextPageToken
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension ListSubscriptionsResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__ListSubscriptionsResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__list_subscriptions_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            subscriptions: ProtoField.messages(m.subscriptions, count: m.n_subscriptions, "subscriptions"),
            nextPageToken: ProtoField.optionalString(m.next_page_token, "next_page_token"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_subscriptions = subscriptions.count
        c.subscriptions = arena.messages(subscriptions)
        arena.set(&c.next_page_token, nextPageToken)
    }
}
