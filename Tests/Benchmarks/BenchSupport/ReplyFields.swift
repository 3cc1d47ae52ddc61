import Wire

/// What the load generator checks in a reply envelope, read straight from its protobuf bytes:
/// call_id (field 1, varint), kind (field 2, varint), where the payload (field 5) lies and
/// whether a status (field 6) is present. The server writes a status only when the call failed,
/// so its presence marks an error.
struct ReplyFields {
    private(set) var callID: UInt64 = 0
    private(set) var kind: UInt64 = 0
    private(set) var hasStatus = false
    /// The payload's bytes within the frame (empty when the envelope carries none).
    private(set) var payload: Range<Int> = 0..<0

    /// Nil when `frame` is not well-formed protobuf.
    init?(_ frame: UnsafeRawBufferPointer) {
        var fields = ReplyFields()
        let wellFormed = ProtoWireScanner.forEachField(in: frame) { number, varint, contents in
            switch number {
            case 1: fields.callID = varint ?? fields.callID
            case 2: fields.kind = varint ?? fields.kind
            case 5: fields.payload = contents ?? fields.payload
            case 6: fields.hasStatus = fields.hasStatus || contents != nil
            default: break
            }
        }
        guard wellFormed else { return nil }
        self = fields
    }

    private init() {}
}
