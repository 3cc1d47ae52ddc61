internal import CProto

/// `subscriptions.entitlement.v1.CheckAccessBatchResponse`: one result per check, in order.
public struct CheckAccessBatchResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.entitlement.v1.CheckAccessBatchResponse"

    public var results: [CheckAccessResponse]

    public init(results: [CheckAccessResponse] = []) { self.results = results }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension CheckAccessBatchResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Entitlement__V1__CheckAccessBatchResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__entitlement__v1__check_access_batch_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        try self.init(results: ProtoField.messages(c.pointee.results, count: c.pointee.n_results, "results"))
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_results = results.count
        c.results = arena.messages(results)
    }
}
