internal import CProto

/// `subscriptions.entitlement.v1.ListEntitlementsResponse`.
public struct ListEntitlementsResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.ListEntitlementsResponse"

    public var entitlements: [EntitlementEntry]

    public init(entitlements: [EntitlementEntry] = []) { self.entitlements = entitlements }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension ListEntitlementsResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__ListEntitlementsResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__list_entitlements_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(
            entitlements: ProtoField.messages(c.pointee.entitlements, count: c.pointee.n_entitlements, "entitlements"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_entitlements = entitlements.count
        c.entitlements = arena.messages(entitlements)
    }
}
