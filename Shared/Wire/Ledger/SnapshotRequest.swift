internal import CProto

/// `subscriptions.ledger.v1.SnapshotRequest`: starts the `Snapshot` server stream. Has no fields.
public struct SnapshotRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.SnapshotRequest"

    /// The request.
    public init() {}

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message for malformed bytes.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form (always empty).
    public func serialized() -> [UInt8] { packed() }
}

extension SnapshotRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__SnapshotRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__snapshot_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) { self.init() }

    func fill(_ c: inout CMessage, in arena: CArena) {}
}
