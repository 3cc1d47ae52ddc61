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
