internal import CProto

/// `subscriptions.verifier.v1.RestorePurchasesRequest`: everything an account presents to get
/// its purchases back.
public struct RestorePurchasesRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.verifier.v1.RestorePurchasesRequest"

    /// One Google purchase (`GooglePurchaseRef`).
    public struct GooglePurchase: Sendable, Hashable {
        /// The fully qualified protobuf name.
        public static let protoName = "subscriptions.verifier.v1.GooglePurchaseRef"

        public var packageName: String
        public var productID: String
        public var purchaseToken: String

        public init(packageName: String = "", productID: String = "", purchaseToken: String = "") {
            self.packageName = packageName
            self.productID = productID
            self.purchaseToken = purchaseToken
        }
    }

    public var accountID: String
    /// At most 100 Apple signed transactions or transaction ids, together.
    public var appleSignedTransactions: [String]
    public var appleTransactionIDs: [String]
    /// At most 100.
    public var googlePurchases: [GooglePurchase]
    public var idempotencyKey: String

    public init(
        accountID: String = "", appleSignedTransactions: [String] = [], appleTransactionIDs: [String] = [],
        googlePurchases: [GooglePurchase] = [], idempotencyKey: String = ""
    ) {
        self.accountID = accountID
        self.appleSignedTransactions = appleSignedTransactions
        self.appleTransactionIDs = appleTransactionIDs
        self.googlePurchases = googlePurchases
        self.idempotencyKey = idempotencyKey
    }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension RestorePurchasesRequest.GooglePurchase: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__GooglePurchaseRef

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__google_purchase_ref__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            packageName: ProtoField.string(m.package_name, "package_name"),
            productID: ProtoField.string(m.product_id, "product_id"),
            purchaseToken: ProtoField.string(m.purchase_token, "purchase_token"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.package_name, packageName)
        arena.set(&c.product_id, productID)
        arena.set(&c.purchase_token, purchaseToken)
    }
}

extension RestorePurchasesRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__RestorePurchasesRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__restore_purchases_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            accountID: ProtoField.string(m.account_id, "account_id"),
            appleSignedTransactions: ProtoField.strings(
                m.apple_signed_transactions, count: m.n_apple_signed_transactions, "apple_signed_transactions"),
            appleTransactionIDs: ProtoField.strings(
                m.apple_transaction_ids, count: m.n_apple_transaction_ids, "apple_transaction_ids"),
            googlePurchases: ProtoField.messages(m.google_purchases, count: m.n_google_purchases, "google_purchases"),
            idempotencyKey: ProtoField.string(m.idempotency_key, "idempotency_key"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.account_id, accountID)
        c.n_apple_signed_transactions = appleSignedTransactions.count
        c.apple_signed_transactions = arena.strings(appleSignedTransactions)
        c.n_apple_transaction_ids = appleTransactionIDs.count
        c.apple_transaction_ids = arena.strings(appleTransactionIDs)
        c.n_google_purchases = googlePurchases.count
        c.google_purchases = arena.messages(googlePurchases)
        arena.set(&c.idempotency_key, idempotencyKey)
    }
}
