internal import CProto

/// `subscriptions.entitlement.v1.CheckAccessBatchRequest`: at most 100 checks.
public struct CheckAccessBatchRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.CheckAccessBatchRequest"

    public var checks: [CheckAccessRequest]

    public init(checks: [CheckAccessRequest] = []) { self.checks = checks }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension CheckAccessBatchRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__CheckAccessBatchRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__check_access_batch_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(checks: ProtoField.messages(c.pointee.checks, count: c.pointee.n_checks, "checks"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_checks = checks.count
        c.checks = arena.messages(checks)
    }
}
