internal import CProto
public import Model

/// `subscriptions.verifier.v1.VerifyApplePurchaseRequest`: an App Store purchase an app backend
/// presents for one of its accounts, as a StoreKit 2 signed transaction or a transaction id.
public struct VerifyApplePurchaseRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.verifier.v1.VerifyApplePurchaseRequest"

    /// The authenticated app account; 1..256 bytes.
    public var accountID: String
    /// A StoreKit 2 signed transaction (JWS, at most 16 KiB)…
    public var signedTransaction: String?
    /// …or a transaction id to look up with the App Store Server API. Exactly one is set.
    public var transactionID: String?
    /// Where to look the transaction id up; nil means the configured environment.
    public var environment: StoreEnvironment?
    /// Retries with the same key return the first answer; 1..128 bytes.
    public var idempotencyKey: String

    public init(
        accountID: String = "", signedTransaction: String? = nil, transactionID: String? = nil,
        environment: StoreEnvironment? = nil, idempotencyKey: String = ""
    ) {
        self.accountID = accountID
        self.signedTransaction = signedTransaction
        self.transactionID = transactionID
        self.environment = environment
        self.idempotencyKey = idempotencyKey
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension VerifyApplePurchaseRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__VerifyApplePurchaseRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__verify_apple_purchase_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            accountID: ProtoField.string(m.account_id, "account_id"),
            signedTransaction: ProtoField.optionalString(m.signed_transaction, "signed_transaction"),
            transactionID: ProtoField.optionalString(m.transaction_id, "transaction_id"),
            environment: ProtoField.enumValue(m.environment.rawValue, "environment"),
            idempotencyKey: ProtoField.string(m.idempotency_key, "idempotency_key"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
        arena.set(&c.signed_transaction, signedTransaction)
        arena.set(&c.transaction_id, transactionID)
        c.environment = .init(rawValue: ProtoField.number(environment))
        arena.set(&c.idempotency_key, idempotencyKey)
    }
}
