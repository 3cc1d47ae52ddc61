import Testing
import Wire

@Suite("FrameDecoder")
struct FrameDecoderTests {
    /// Length-prefixes each body.
    static func stream(_ bodies: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for body in bodies {
            let n = UInt32(body.count)
            out += [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + body
        }
        return out
    }

    static let bodies: [[UInt8]] = [[1], [2, 3, 4], Array(repeating: 7, count: 300), [9, 9], Array(0...255)]

    func decodeAll(_ chunks: [[UInt8]], max: Int = 1024) throws -> [[UInt8]] {
        var decoder = FrameDecoder(maxFrameLength: max)
        var frames: [[UInt8]] = []
        for chunk in chunks {
            try chunk.withUnsafeBytes { raw in
                try decoder.decode(raw) { frames.append([UInt8]($0)) }
            }
        }
        return frames
    }

    @Test("a stream split at every byte offset yields the same frames")
    func splitAtEveryOffset() throws {
        let bytes = Self.stream(Self.bodies)
        for cut in 0...bytes.count {
            let frames = try decodeAll([Array(bytes[..<cut]), Array(bytes[cut...])])
            #expect(frames == Self.bodies, "cut at \(cut)")
        }
    }

    @Test("a stream fed one byte at a time yields the same frames")
    func oneByteAtATime() throws {
        let bytes = Self.stream(Self.bodies)
        #expect(try decodeAll(bytes.map { [$0] }) == Self.bodies)
    }

    @Test("a stream split at every pair of offsets yields the same frames")
    func splitAtEveryPair() throws {
        let bytes = Self.stream([[1, 2, 3], [4], [5, 6, 7, 8, 9]])
        for first in 0...bytes.count {
            for second in first...bytes.count {
                let frames = try decodeAll([
                    Array(bytes[..<first]), Array(bytes[first..<second]), Array(bytes[second...]),
                ])
                #expect(frames == [[1, 2, 3], [4], [5, 6, 7, 8, 9]])
            }
        }
    }

    @Test("a length above the maximum fails as soon as the header is complete, before the body arrives")
    func tooLong() throws {
        var decoder = FrameDecoder(maxFrameLength: 1024)
        // Only the 4 header bytes, declaring 2 GiB: nothing of that size may be reserved.
        let header: [UInt8] = [0x80, 0, 0, 0]
        #expect(throws: FrameDecoder.Failure.frameTooLong(length: 0x8000_0000, maximum: 1024)) {
            try header.withUnsafeBytes { raw in try decoder.decode(raw) { _ in Issue.record("no frame expected") } }
        }
        // The same when the header arrives in pieces.
        var split = FrameDecoder(maxFrameLength: 1024)
        try [UInt8]([0, 0]).withUnsafeBytes { raw in try split.decode(raw) { _ in } }
        #expect(throws: FrameDecoder.Failure.frameTooLong(length: 1025, maximum: 1024)) {
            try [UInt8]([4, 1]).withUnsafeBytes { raw in try split.decode(raw) { _ in } }
        }
    }

    @Test("a frame of exactly the maximum length is accepted")
    func exactlyMaximum() throws {
        let body = [UInt8](repeating: 5, count: 1024)
        #expect(try decodeAll([Self.stream([body])], max: 1024) == [body])
    }

    @Test("a zero length is an error")
    func zeroLength() {
        var decoder = FrameDecoder(maxFrameLength: 1024)
        #expect(throws: FrameDecoder.Failure.emptyFrame) {
            try [UInt8]([0, 0, 0, 0]).withUnsafeBytes { raw in try decoder.decode(raw) { _ in } }
        }
    }

    @Test("a truncated frame yields nothing and reports a partial frame")
    func truncated() throws {
        var decoder = FrameDecoder(maxFrameLength: 1024)
        var count = 0
        try [UInt8]([0, 0, 0, 5, 1, 2]).withUnsafeBytes { raw in try decoder.decode(raw) { _ in count += 1 } }
        #expect(count == 0)
        #expect(decoder.hasPartialFrame)
        try [UInt8]([3, 4, 5]).withUnsafeBytes { raw in try decoder.decode(raw) { _ in count += 1 } }
        #expect(count == 1)
        #expect(!decoder.hasPartialFrame)
    }
}
