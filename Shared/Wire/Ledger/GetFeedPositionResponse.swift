internal import CProto

/// `subscriptions.ledger.v1.GetFeedPositionResponse`: the newest change-feed position.
public struct GetFeedPositionResponse: ProtoMessage, Hashable {
    public static let protoName = "subscriptions.ledger.v1.GetFeedPositionResponse"

    public var position: UInt64

    public init(position: UInt64 = 0) { self.position = position }

    /// Decodes a response; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    public func serialized() -> [UInt8] { packed() }
}

extension GetFeedPositionResponse: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__GetFeedPositionResponse

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__get_feed_position_response__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) { self.init(position: c.pointee.position) }

    func fill(_ c: inout CMessage, in arena: CArena) { c.position = position }
}
