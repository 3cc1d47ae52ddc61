internal import CProto
public import Model

/// `subscriptions.ledger.v1.ListInboxRequest`: one page of the inbox work queue.
public struct ListInboxRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.ListInboxRequest"

    /// `nil` lists pending and failed entries.
    public var status: InboxStatus?
    /// `nil` lists both stores.
    public var store: Store?
    /// 1...500; 0 means 100.
    public var pageSize: UInt32
    /// From the previous response; `nil` for the first page.
    public var pageToken: String?

    /// A request; fields default to absent and 0.
    public init(status: InboxStatus? = nil, store: Store? = nil, pageSize: UInt32 = 0, pageToken: String? = nil) {
        self.status = status
        self.store = store
        self.pageSize = pageSize
        self.pageToken = pageToken
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension ListInboxRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__ListInboxRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__list_inbox_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            status: ProtoField.enumValue(m.status.rawValue, "status"),
            store: ProtoField.enumValue(m.store.rawValue, "store"),
            pageSize: m.page_size,
            pageToken: ProtoField.optionalString(m.page_token, "page_token"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.status = .init(rawValue: ProtoField.number(status))
        c.store = .init(rawValue: ProtoField.number(store))
        c.page_size = pageSize
        arena.set(&c.page_token, pageToken)
    }
}
