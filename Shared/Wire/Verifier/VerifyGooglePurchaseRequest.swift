internal import CProto

/// `subscriptions.verifier.v1.VerifyGooglePurchaseRequest`: a Google Play purchase an app
/// backend presents for one of its accounts.
public struct VerifyGooglePurchaseRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.verifier.v1.VerifyGooglePurchaseRequest"

    public var accountID: String
    public var packageName: String
    public var productID: String
    /// At most 4 KiB.
    public var purchaseToken: String
    public var idempotencyKey: String

    public init(
        accountID: String = "", packageName: String = "", productID: String = "", purchaseToken: String = "",
        idempotencyKey: String = ""
    ) {
        self.accountID = accountID
        self.packageName = packageName
        self.productID = productID
        self.purchaseToken = purchaseToken
        self.idempotencyKey = idempotencyKey
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension VerifyGooglePurchaseRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__VerifyGooglePurchaseRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__verify_google_purchase_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            accountID: ProtoField.string(m.account_id, "account_id"),
            packageName: ProtoField.string(m.package_name, "package_name"),
            productID: ProtoField.string(m.product_id, "product_id"),
            purchaseToken: ProtoField.string(m.purchase_token, "purchase_token"),
            idempotencyKey: ProtoField.string(m.idempotency_key, "idempotency_key"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
        arena.set(&c.package_name, packageName)
        arena.set(&c.product_id, productID)
        arena.set(&c.purchase_token, purchaseToken)
        arena.set(&c.idempotency_key, idempotencyKey)
    }
}
