import Wire

/// Request frames of one method, encoded once by protobuf-c and laid end to end, each with call
/// id 1. A load generator sends one by copying it and writing its call id over that byte (the
/// envelope's first field, a one-byte varint for ids up to 127), so choosing a request costs a
/// copy: no encoding and no reference counting in the loop that measures the server.
public final class RequestPool {
    public static let maximumCallID = 127
    public let method: String
    private let bytes: [UInt8]
    /// Where each frame starts in `bytes`, then the end of the last one.
    private let offsets: [Int]
    /// The offset of the call id's value byte in a frame: the length prefix, then field 1's tag.
    private static let callIDOffset = 5

    public var count: Int { offsets.count - 1 }

    /// Encodes one request frame per payload. Throws when there is none, or when protobuf-c did
    /// not put the call id where it is patched.
    public init(method: String, payloads: [[UInt8]]) throws(BenchError) {
        guard !payloads.isEmpty else { throw BenchError("a request pool needs at least one payload") }
        self.method = method
        var bytes: [UInt8] = []
        var offsets = [0]
        method.withCString { name in
            for payload in payloads {
                payload.withUnsafeBytes { body in
                    Envelope.appendFrame(to: &bytes, callID: 1, kind: .request, method: name, payload: body)
                }
                offsets.append(bytes.count)
            }
        }
        self.bytes = bytes
        self.offsets = offsets
        // Field 1 (call_id) as a varint: tag 0x08 then the value 1, right after the length prefix.
        for index in 0..<payloads.count {
            let start = offsets[index]
            guard bytes[start + Self.callIDOffset - 1] == 0x08, bytes[start + Self.callIDOffset] == 1 else {
                throw BenchError("protobuf-c did not encode the call id as the envelope's first byte pair")
            }
        }
    }

    /// Appends frame `index` to `output` with call id `callID` (1…127).
    func append(_ index: Int, callID: UInt8, to output: inout [UInt8]) {
        let start = output.count
        bytes.withUnsafeBufferPointer { all in
            output.append(contentsOf: UnsafeBufferPointer(rebasing: all[offsets[index]..<offsets[index + 1]]))
        }
        output[start + Self.callIDOffset] = callID
    }
}
