internal import CProto

/// `subscriptions.ledger.v1.GetFeedPositionRequest` (no fields).
public struct GetFeedPositionRequest: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.ledger.v1.GetFeedPositionRequest"

    public init() {}

    /// Decodes a request; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension GetFeedPositionRequest: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetFeedPositionRequest

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_feed_position_request__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) { self.init() }

    func fill(_ c: inout CMessage, in arena: CArena) {}
}
