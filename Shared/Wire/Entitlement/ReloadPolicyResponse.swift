internal import CProto

/// `subscriptions.entitlement.v1.ReloadPolicyResponse`: the policy now in force.
public struct ReloadPolicyResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.ReloadPolicyResponse"

    /// A digest of the policy now in force.
    public var version: String
    public var products: UInt32
    public var capabilities: UInt32

    public init(version: String = "", products: UInt32 = 0, capabilities: UInt32 = 0) {
        self.version = version
        self.products = products
        self.capabilities = capabilities
    }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension ReloadPolicyResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__ReloadPolicyResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__reload_policy_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            version: ProtoField.string(m.version, "version"), products: m.products, capabilities: m.capabilities)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        arena.set(&c.version, version)
        c.products = products
        c.capabilities = capabilities
    }
}
