internal import CProto

/// `subscriptions.ledger.v1.GetAccountRequest`.
public struct GetAccountRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.GetAccountRequest"

    /// The app account to read.
    public var accountID: String

    /// A request for `accountID`.
    public init(accountID: String = "") { self.accountID = accountID }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension GetAccountRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetAccountRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_account_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(accountID: ProtoField.string(c.pointee.account_id, "account_id"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
    }
}
