import Testing
import Wire

@Suite("Proto wire reader")
struct ProtoWireReaderTests {
    static func field(_ bytes: [UInt8], _ number: UInt64) -> [UInt8]? {
        bytes.withUnsafeBytes { raw in ProtoWireReader.lastLengthDelimited(number, in: raw).map { [UInt8]($0) } }
    }

    @Test("a length-delimited field is found past fields of every wire type, and the last occurrence wins")
    func findsLastOccurrence() {
        let message: [UInt8] =
            [0x08, 0x96, 0x01]  // field 1, varint 150
            + [0x11] + [UInt8](repeating: 7, count: 8)  // field 2, fixed64
            + [0x1D] + [UInt8](repeating: 8, count: 4)  // field 3, fixed32
            + [0x22, 0x02, 0x61, 0x62]  // field 4, "ab"
            + [0x22, 0x01, 0x63]  // field 4 again, "c"
            + [0x2A, 0x00]  // field 5, empty
        #expect(Self.field(message, 4) == [0x63])
        #expect(Self.field(message, 5) == [])
        #expect(Self.field(message, 6) == nil)
        // A field number that is not length-delimited here is not returned.
        #expect(Self.field(message, 1) == nil)
        // The same request as protobuf-c encodes it.
        let request = CheckAccessRequest(accountID: "acct-1", capability: "pro").serialized()
        #expect(Self.field(request, 1) == Array("acct-1".utf8))
        #expect(Self.field(request, 2) == Array("pro".utf8))
    }

    @Test("every field is walked in order with its varint or where its contents lie; a malformed tail stops the walk")
    func walksFields() {
        let message: [UInt8] =
            [0x08, 0x96, 0x01]  // field 1, varint 150
            + [0x11] + [UInt8](repeating: 7, count: 8)  // field 2, fixed64
            + [0x22, 0x02, 0x61, 0x62]  // field 4, "ab"
        func walk(_ bytes: [UInt8]) -> (seen: [String], problem: String?) {
            bytes.withUnsafeBytes { raw in
                var reader = ProtoWireReader(raw)
                var seen: [String] = []
                while let (number, value) = reader.next() {
                    let contents = value.contents.map {
                        "\(UnsafeRawPointer($0.baseAddress!) - raw.baseAddress!)+\($0.count)"
                    }
                    seen.append("\(number) \(value.varint.map(String.init) ?? "-") \(contents ?? "-")")
                }
                return (seen, reader.problem)
            }
        }
        let whole = walk(message)
        #expect(whole.seen == ["1 150 -", "2 - -", "4 - 14+2"])
        #expect(whole.problem == nil)
        let truncated = walk(message + [0x2A, 0x05, 0x01])
        #expect(truncated.seen == ["1 150 -", "2 - -", "4 - 14+2"])
        #expect(truncated.problem == "field 5 at byte 16 declares 5 bytes but 1 remain")
    }

    @Test(
        "bytes that are not well-formed give nil, whatever came before",
        arguments: [
            [0x0A, 0x05, 0x61],  // declares 5 bytes, has 1
            [0x0A, 0x01, 0x61, 0x08],  // truncated varint key's value
            [0x0A, 0x01, 0x61, 0x0B],  // wire type 3 (groups are not supported)
            [0x0A, 0x01, 0x61, 0x11, 0x00],  // truncated fixed64
            [0x0A, 0x01, 0x61, 0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],  // huge length
            [0x0A, 0x01, 0x61, 0x80],  // truncated key
        ] as [[UInt8]])
    func malformed(_ bytes: [UInt8]) {
        #expect(Self.field(bytes, 1) == nil)
    }
}
