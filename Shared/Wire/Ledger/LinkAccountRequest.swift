internal import CProto
public import Model

/// `subscriptions.ledger.v1.LinkAccountRequest`: links a subscription to an account under a
/// transfer policy.
public struct LinkAccountRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.LinkAccountRequest"

    /// Retries with the same key return the first answer.
    public var idempotencyKey: String
    /// The subscription to link; `nil` when the message carries none.
    public var key: SubscriptionKey?
    /// The account to link to.
    public var accountID: String
    /// Apple `appAccountToken` or Google obfuscated account id, when the purchase carried one.
    public var storeAccountRef: String?
    /// `nil` means the ledger's configured default.
    public var policy: TransferPolicy?

    /// A request; fields default to empty and absent.
    public init(
        idempotencyKey: String = "", key: SubscriptionKey? = nil, accountID: String = "",
        storeAccountRef: String? = nil, policy: TransferPolicy? = nil
    ) {
        self.idempotencyKey = idempotencyKey
        self.key = key
        self.accountID = accountID
        self.storeAccountRef = storeAccountRef
        self.policy = policy
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension LinkAccountRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__LinkAccountRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__link_account_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            idempotencyKey: ProtoField.string(m.idempotency_key, "idempotency_key"),
            key: ProtoField.message(m.key, "key"),
            accountID: ProtoField.string(m.account_id, "account_id"),
            storeAccountRef: ProtoField.optionalString(m.store_account_ref, "store_account_ref"),
            policy: ProtoField.enumValue(m.policy.rawValue, "policy"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.idempotency_key, idempotencyKey)
        c.key = key?.cMessage(in: arena)
        arena.set(&c.account_id, accountID)
        arena.set(&c.store_account_ref, storeAccountRef)
        c.policy = .init(rawValue: ProtoField.number(policy))
    }
}
