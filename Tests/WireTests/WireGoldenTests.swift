import Foundation
import Testing
import Wire

/// The encodings of a fixed set of every message, kept in `Golden/wire.txt` (one line per value:
/// index, message name, hex bytes). A change that alters a byte on the wire fails here; when the
/// change is meant, `WIRE_GOLDEN_WRITE=1 swift test --filter WireGoldenTests` rewrites the file.
@Suite("Golden wire bytes", .serialized)
struct WireGoldenTests {
    static let goldenPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Golden/wire.txt").path

    static func lines() -> [String] {
        let full = WireGoldenFixtures.fullMessages.enumerated().map { index, message in
            "full \(index) \(message.protoName) \(hex(message.value.serialized()))"
        }
        let empty = WireGoldenFixtures.defaultMessages.enumerated().map { index, message in
            "default \(index) \(message.protoName) \(hex(message.value.serialized()))"
        }
        return full + empty
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    @Test("every message encodes to the golden bytes")
    func matchesGolden() throws {
        let actual = Self.lines()
        if ProcessInfo.processInfo.environment["WIRE_GOLDEN_WRITE"] == "1" {
            try (actual.joined(separator: "\n") + "\n").write(
                toFile: Self.goldenPath, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOfFile: Self.goldenPath, encoding: .utf8).split(separator: "\n").map(
            String.init)
        #expect(golden.count == actual.count)
        for (expected, line) in zip(golden, actual) { #expect(line == expected) }
    }

    @Test("the golden bytes decode to the fixtures and encode back to themselves")
    func goldenDecodes() throws {
        let golden = try String(contentsOfFile: Self.goldenPath, encoding: .utf8).split(separator: "\n")
        let cases = WireGoldenFixtures.fullMessages + WireGoldenFixtures.defaultMessages
        try #require(golden.count == cases.count)
        for (line, message) in zip(golden, cases) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            try #require(fields.count == 4)
            #expect(String(fields[2]) == message.protoName)
            let bytes = Self.bytes(hex: fields[3])
            let decoded = try message.decode(bytes)
            #expect(message.isEqual(decoded), "\(message.protoName)")
            #expect(decoded.serialized() == bytes, "\(message.protoName)")
        }
    }

    static func bytes(hex: Substring) -> [UInt8] {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let value = character <= 57 ? character - 48 : character - 87
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }
}
