internal import CProto
public import Model

/// `subscriptions.ledger.v1.GetAccountResponse`: what one account owns.
public struct GetAccountResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.GetAccountResponse"

    /// The app account.
    public var accountID: String
    /// At most 1000.
    public var subscriptions: [Subscription]
    /// At most 1000.
    public var links: [AccountLink]

    /// A response; fields default to empty.
    public init(accountID: String = "", subscriptions: [Subscription] = [], links: [AccountLink] = []) {
        self.accountID = accountID
        self.subscriptions = subscriptions
        self.links = links
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension GetAccountResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetAccountResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_account_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            accountID: ProtoField.string(m.account_id, "account_id"),
            subscriptions: ProtoField.messages(m.subscriptions, count: m.n_subscriptions, "subscriptions"),
            links: ProtoField.messages(m.links, count: m.n_links, "links"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
        c.n_subscriptions = subscriptions.count
        c.subscriptions = arena.messages(subscriptions)
        c.n_links = links.count
        c.links = arena.messages(links)
    }
}
