internal import CProto
public import Model

/// `subscriptions.ledger.v1.GetHistoryRequest`: one page of the audit trail of an account or a
/// subscription, newest first.
public struct GetHistoryRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.GetHistoryRequest"

    /// Exactly one of `accountID` and `key` is set.
    public var accountID: String?
    /// The subscription whose history to read.
    public var key: SubscriptionKey?
    /// 1...500; 0 means 100.
    public var pageSize: UInt32
    /// From the previous response; `nil` for the first page.
    public var pageToken: String?

    /// A request; fields default to absent and 0.
    public init(
        accountID: String? = nil, key: SubscriptionKey? = nil, pageSize: UInt32 = 0, pageToken: String? = nil
    ) {
        self.accountID = accountID
        self.key = key
        self.pageSize = pageSize
        self.pageToken = pageToken
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension GetHistoryRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetHistoryRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_history_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            accountID: ProtoField.optionalString(m.account_id, "account_id"),
            key: ProtoField.message(m.key, "key"),
            pageSize: m.page_size,
            pageToken: ProtoField.optionalString(m.page_token, "page_token"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
        c.key = key?.cMessage(in: arena)
        c.page_size = pageSize
        arena.set(&c.page_token, pageToken)
    }
}
