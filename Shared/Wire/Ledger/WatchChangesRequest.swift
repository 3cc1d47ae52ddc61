internal import CProto

/// `subscriptions.ledger.v1.WatchChangesRequest`: starts the `WatchChanges` server stream.
public struct WatchChangesRequest: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.WatchChangesRequest"

    /// The last position the reader has applied; 0 for the beginning.
    public var after: UInt64

    /// A request for every change after `after`.
    public init(after: UInt64 = 0) { self.after = after }

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension WatchChangesRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__WatchChangesRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__watch_changes_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) { self.init(after: c.pointee.after) }

    func fill(_ c: inout CMessage, in arena: CArena) { c.after = after }
}
