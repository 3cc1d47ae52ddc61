internal import CProto

/// `subscriptions.ledger.v1.ListInboxResponse`.
public struct ListInboxResponse: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.ListInboxResponse"

    /// The page.
    public var entries: [InboxEntry]
    /// The token for the next page; `nil` on the last page.
    public var nextPageToken: String?

    /// A response; fields default to empty and absent.
    public init(entries: [InboxEntry] = [], nextPageToken: String? = nil) {
        self.entries = entries
        self.nextPageToken = nextPageToken
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension ListInboxResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__ListInboxResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__list_inbox_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            entries: ProtoField.messages(m.entries, count: m.n_entries, "entries"),
            nextPageToken: ProtoField.optionalString(m.next_page_token, "next_page_token"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_entries = entries.count
        c.entries = arena.messages(entries)
        arena.set(&c.next_page_token, nextPageToken)
    }
}
