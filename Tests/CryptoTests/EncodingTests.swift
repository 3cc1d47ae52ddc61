import Crypto
import Foundation
import TestSupport
import Testing

@Suite("base64url and ECDSA signature encodings")
struct EncodingTests {
    /// base64url through Foundation alone: the alphabet mapped to standard base64, padded.
    static func foundationDecode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 < 0x80 }), text.utf8.count % 4 != 1,
            text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        else { return nil }
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { [UInt8]($0) }
    }

    static func canonical(_ text: String) -> [UInt8]? {
        Array(text.utf8).withUnsafeBufferPointer { Base64URL.decodeCanonical(utf8: $0) }
    }

    @Test(
        "the table decoder takes exactly the canonical text Foundation decodes, to the same bytes; decode takes the rest too"
    )
    func base64URL() {
        var random = SeededGenerator(seed: 1)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var cases = ["", "A", "AB", "AA", "AAA", "AAB", "QQ", "QR", "QUI", "QUJ", "_-_-", "a=", "ab+/", "ab c", "é"]
        for length in 0..<40 {
            for _ in 0..<20 {
                var text = String((0..<length).map { _ in alphabet.randomElement(using: &random)! })
                if length > 0 && Int.random(in: 0..<4, using: &random) == 0 {
                    // A character outside the alphabet somewhere.
                    var characters = Array(text)
                    characters[Int.random(in: 0..<length, using: &random)] = ["=", "+", "/", " ", ".", "\n"]
                        .randomElement(using: &random)!
                    text = String(characters)
                }
                cases.append(text)
            }
        }
        var canonical = 0
        for text in cases {
            let general = Self.foundationDecode(text)
            let fast = Self.canonical(text)
            // Taken exactly when Foundation decodes it and it is the canonical form of its bytes.
            #expect((fast != nil) == (general.map { Base64URL.encode($0) == text } ?? false), "\(text)")
            if let fast {
                #expect(fast == general, "\(text)")
                canonical += 1
            }
            #expect(Base64URL.decode(text) == general, "\(text)")
        }
        #expect(canonical > 150)
        #expect(Self.canonical("QQ") == [0x41])
        #expect(Self.canonical("QR") == nil)
        #expect(Base64URL.decode("QR") == [0x41])
    }

    /// A DER SEQUENCE of exactly two positive INTEGERs, every length in its shortest form and
    /// no integer with a leading zero byte unless the next byte has its high bit set.
    static func isMinimalSignature(_ der: [UInt8]) -> Bool {
        var at = 0
        func length() -> Int? {
            guard at < der.count else { return nil }
            let first = der[at]
            at += 1
            if first < 0x80 { return Int(first) }
            let count = Int(first & 0x7F)
            guard count == 1, at < der.count, der[at] >= 0x80 else { return nil }  // shortest form only
            at += 1
            return Int(der[at - 1])
        }
        func integer() -> Bool {
            guard at < der.count, der[at] == 0x02 else { return false }
            at += 1
            guard let count = length(), count > 0, at + count <= der.count else { return false }
            let bytes = der[at..<(at + count)]
            at += count
            if bytes.first! == 0 { return count > 1 && bytes.dropFirst().first! >= 0x80 }
            return bytes.first! < 0x80
        }
        guard der.first == 0x30 else { return false }
        at = 1
        guard let total = length(), at + total == der.count else { return false }
        return integer() && integer() && at == der.count
    }

    @Test(
        "DER from R||S is what OpenSSL reads back, minimal, for P-256 and P-521 sizes; zero R or S and wrong lengths are refused"
    )
    func derSignature() throws {
        var random = SeededGenerator(seed: 2)
        for coordinate in [32, 66] {
            var raws: [[UInt8]] = []
            for _ in 0..<200 {
                raws.append((0..<(2 * coordinate)).map { _ in UInt8.random(in: 0...255, using: &random) })
            }
            // Leading zeros, high bits, both, and the smallest values.
            raws.append(
                [0, 0, 0x80] + [UInt8](repeating: 1, count: coordinate - 3) + [0x7F]
                    + [UInt8](repeating: 0xFF, count: coordinate - 1))
            raws.append(
                [UInt8](repeating: 0, count: coordinate - 1) + [1] + [UInt8](repeating: 0, count: coordinate - 1) + [1])
            raws.append([UInt8](repeating: 0xFF, count: 2 * coordinate))
            for raw in raws {
                let der = try ECDSASignature.der(fromRaw: raw, coordinateBytes: coordinate)
                #expect(try ECDSASignature.raw(fromDER: der, coordinateBytes: coordinate) == raw)
                #expect(Self.isMinimalSignature(der), "\(der)")
            }
        }
        #expect(
            try ECDSASignature.der(
                fromRaw: [0, 0x80] + [UInt8](repeating: 0, count: 30) + [UInt8](repeating: 0, count: 31) + [5],
                coordinateBytes: 32)
                == [0x30, 0x25, 0x02, 0x20, 0x00, 0x80] + [UInt8](repeating: 0, count: 30) + [0x02, 0x01, 0x05])
        func refusal(_ raw: [UInt8]) -> String? {
            do {
                _ = try ECDSASignature.der(fromRaw: raw, coordinateBytes: 32)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal([UInt8](repeating: 0, count: 32) + [UInt8](repeating: 1, count: 32)) == "R is zero")
        #expect(refusal([UInt8](repeating: 1, count: 32) + [UInt8](repeating: 0, count: 32)) == "S is zero")
        #expect(refusal([UInt8](repeating: 1, count: 63)) == "an R||S signature must be 64 bytes, not 63")
    }
}
