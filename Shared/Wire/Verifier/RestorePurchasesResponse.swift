internal import CProto
public import Model

/// `subscriptions.verifier.v1.RestorePurchasesResponse`: what the account owns after a restore.
public struct RestorePurchasesResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.verifier.v1.RestorePurchasesResponse"

    /// At most 1000.
    public var subscriptions: [Subscription]

    public init(subscriptions: [Subscription] = []) { self.subscriptions = subscriptions }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension RestorePurchasesResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Verifier__V1__RestorePurchasesResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__verifier__v1__restore_purchases_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(subscriptions: ProtoField.messages(m.subscriptions, count: m.n_subscriptions, "subscriptions"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_subscriptions = subscriptions.count
        c.subscriptions = arena.messages(subscriptions)
    }
}
