internal import CProto

/// `subscriptions.entitlement.v1.ReloadPolicyRequest` (no fields).
public struct ReloadPolicyRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.ReloadPolicyRequest"

    public init() {}

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension ReloadPolicyRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__ReloadPolicyRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__reload_policy_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) { self.init() }

    func fill(_ c: inout CMessage, in arena: CArena) {}
}
