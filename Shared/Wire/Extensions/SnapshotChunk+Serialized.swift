extension SnapshotChunk {
    /// The `subscriptions` field (1) of a chunk for subscriptions already serialized (as the
    /// ledger stores them): appending a chunk's other fields gives the whole chunk, since a
    /// message's fields may come in any order. Lets the ledger stream stored states without
    /// decoding and encoding them again.
    public static func subscriptionsField(_ serialized: [[UInt8]]) -> [UInt8] {
        var out = ProtoWireWriter(capacity: serialized.reduce(0) { $0 + $1.count + 6 })
        for message in serialized { out.field(1, bytes: message) }
        return out.bytes
    }
}
