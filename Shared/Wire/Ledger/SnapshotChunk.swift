internal import CProto
public import Model

/// `subscriptions.ledger.v1.SnapshotChunk`: one message of the `Snapshot` stream. The last chunk
/// has `complete` set and the change-feed position the snapshot reflects.
public struct SnapshotChunk: ProtoMessage, Hashable {
    /// The fully qualified protobuf name.
    public static let protoName = "subscriptions.ledger.v1.SnapshotChunk"

    /// At most 500 per chunk.
    public var subscriptions: [Subscription]
    /// At most 500 per chunk.
    public var links: [AccountLink]
    /// True on the last chunk of the snapshot.
    public var complete: Bool
    /// Set on the complete chunk: continue with `WatchChangesRequest(after: position)`.
    public var position: UInt64

    /// A chunk; fields default to empty, false and 0.
    public init(
        subscriptions: [Subscription] = [], links: [AccountLink] = [], complete: Bool = false, position: UInt64 = 0
    ) {
        self.subscriptions = subscriptions
        self.links = links
        self.complete = complete
        self.position = position
    }

    /// Decodes a chunk; throws `RPCError(.invalidArgument)` naming the message and field.
    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) { self = try Self.unpacked(bytes) }

    /// The serialized form.
    public func serialized() -> [UInt8] { packed() }
}

extension SnapshotChunk: CMessageConvertible {
    typealias CMessage = Subscriptions__Ledger__V1__SnapshotChunk

    static func initialize(_ message: UnsafeMutablePointer<CMessage>) {
        subscriptions__ledger__v1__snapshot_chunk__init(message)
    }

    init(_ c: UnsafePointer<CMessage>) throws(ProtoFieldError) {
        let m = c.pointee
        try self.init(
            subscriptions: ProtoField.messages(m.subscriptions, count: m.n_subscriptions, "subscriptions"),
            links: ProtoField.messages(m.links, count: m.n_links, "links"),
            complete: m.complete != 0,
            position: m.position)
    }

    func fill(_ c: inout CMessage, in arena: CArena) {
        c.n_subscriptions = subscriptions.count
        c.subscriptions = arena.messages(subscriptions)
        c.n_links = links.count
        c.links = arena.messages(links)
        c.complete = complete ? 1 : 0
        c.position = position
    }
}

extension SnapshotChunk {
    /// The `subscriptions` field (1) of a chunk for subscriptions already serialized (as the
    /// ledger stores them): appending a chunk's other fields gives the whole chunk, since a
    /// message's fields may come in any order. Lets the ledger stream stored states without
    /// decoding and encoding them again.
    public static func subscriptionsField(_ serialized: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(serialized.reduce(0) { $0 + $1.count + 6 })
        for message in serialized {
            out.append(0x0A)  // field 1, length-delimited
            var length = UInt64(message.count)
            while length >= 0x80 {
                out.append(UInt8(length & 0x7F) | 0x80)
                length >>= 7
            }
            out.append(UInt8(length))
            out += message
        }
        return out
    }
}
