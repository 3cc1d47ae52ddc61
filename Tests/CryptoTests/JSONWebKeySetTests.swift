import Crypto
import Foundation
import TestSupport
import Testing

@Suite("RSA public keys from JWK, and JWKS documents")
struct JSONWebKeySetTests {
    /// The public half of `key`, read back through PEM.
    private static func publicHalf(_ key: PrivateKey) throws -> PublicKey { try PublicKey(pem: key.publicKeyPEM()) }

    /// A JWKS document of one RSA member with the given fields.
    private static func document(_ members: [[String: Any]]) throws -> [UInt8] {
        [UInt8](try JSONSerialization.data(withJSONObject: ["keys": members]))
    }

    @Test("a generated RSA key's public half round-trips through JWK n and e and verifies its signatures")
    func jwkRoundTrip() throws {
        let key = try TestRSAKeys.key(0)
        let components = try #require(try Self.publicHalf(key).rsaComponents)
        #expect(components.exponent == [0x01, 0x00, 0x01])
        #expect(components.modulus.count == 256)
        #expect(components.modulus[0] & 0x80 == 0x80)

        let rebuilt = try PublicKey(
            jwkModulus: Base64URL.encode(components.modulus), jwkExponent: Base64URL.encode(components.exponent))
        #expect(rebuilt.algorithm == .rsa(bits: 2048))
        #expect(rebuilt.rsaComponents?.modulus == components.modulus)
        #expect(rebuilt.rsaComponents?.exponent == components.exponent)

        let message = Array("header.payload".utf8)
        var signature = try key.signSHA256(message)
        #expect(rebuilt.verifySHA256(signature: signature, message: message))
        #expect(!rebuilt.verifySHA256(signature: signature, message: Array("header.payloaD".utf8)))
        signature[100] ^= 0x01
        #expect(!rebuilt.verifySHA256(signature: signature, message: message))
    }

    @Test("an RS256 compact JWS signed with the private key verifies with the key rebuilt from the JWKS")
    func jwsWithKeyFromSet() throws {
        let key = try TestRSAKeys.key(0)
        let set = JSONWebKeySet(keys: [.init(publicKey: try Self.publicHalf(key), keyID: "k1")])
        let reread = try JSONWebKeySet(json: set.json())
        let jws = try CompactJWS(
            CompactJWS.sign(
                header: Array(#"{"alg":"RS256","kid":"k1"}"#.utf8), payload: Array("{}".utf8), key: key,
                algorithm: .rs256))
        let found = try #require(reread.key(withID: "k1"))
        #expect(found.algorithm == "RS256")
        #expect(found.publicKey.verifySHA256(signature: jws.signature, message: jws.signingInput))
        #expect(reread.key(withID: "k2") == nil)
    }

    @Test("json() writes sorted RSA members that read back to the same keys")
    func writtenDocument() throws {
        let first = try Self.publicHalf(try TestRSAKeys.key(0))
        let second = try Self.publicHalf(try TestRSAKeys.key(1))
        let set = JSONWebKeySet(keys: [
            .init(publicKey: first, keyID: "a"), .init(publicKey: second, keyID: "b", algorithm: nil),
        ])
        let text = String(decoding: set.json(), as: UTF8.self)
        let n = Base64URL.encode(try #require(first.rsaComponents).modulus)
        #expect(text.hasPrefix(#"{"keys":[{"alg":"RS256","e":"AQAB","kid":"a","kty":"RSA","n":"\#(n)","use":"sig"}"#))
        let reread = try JSONWebKeySet(json: set.json())
        #expect(reread.keys.map(\.keyID) == ["a", "b"])
        #expect(reread.keys.map(\.algorithm) == ["RS256", nil])
        #expect(reread.keys[1].publicKey.rsaComponents?.modulus == second.rsaComponents?.modulus)
    }

    @Test("keys that are not RSA, or not for signing, are skipped")
    func skipsOtherKeys() throws {
        let components = try #require(try Self.publicHalf(try TestRSAKeys.key(2)).rsaComponents)
        let n = Base64URL.encode(components.modulus)
        let set = try JSONWebKeySet(
            json: Self.document([
                ["kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"],
                ["kty": "oct", "kid": "secret", "k": "c2VjcmV0"],
                ["kty": "RSA", "kid": "encryption", "use": "enc", "n": n, "e": "AQAB"],
                ["kty": "RSA", "kid": "signing", "use": "sig", "alg": "RS256", "n": n, "e": "AQAB"],
                ["kty": "RSA", "n": n, "e": "AQAB"],
            ]))
        #expect(set.keys.map(\.keyID) == ["signing", nil])
        #expect(set.key(withID: "ec") == nil)
        #expect(set.key(withID: "encryption") == nil)
    }

    @Test(
        "n or e that is not base64url is refused",
        arguments: [
            ("AQAB+", "AQAB", "the JWK modulus n is not base64url"),
            ("a.b", "AQAB", "the JWK modulus n is not base64url"),
            ("", "AQAB", "the JWK modulus n is not base64url"),
            ("valid", "AQ AB", "the JWK exponent e is not base64url"),
        ])
    func badBase64(n: String, e: String, message: String) throws {
        let modulus = Base64URL.encode([0xC1] + [UInt8](repeating: 0x55, count: 255))
        let error = #expect(throws: CryptoError.self) {
            try PublicKey(jwkModulus: n == "valid" ? modulus : n, jwkExponent: e)
        }
        #expect(error?.message == message)
    }

    @Test(
        "a modulus under 2048 bits is refused; leading zero bytes do not count",
        arguments: [
            ([UInt8](repeating: 0xFF, count: 128), 1024),
            ([0x7F] + [UInt8](repeating: 0xFF, count: 255), 2047),
            ([0x00, 0x7F] + [UInt8](repeating: 0xFF, count: 255), 2047),
            ([], 0),
        ])
    func shortModulus(modulus: [UInt8], bits: Int) throws {
        let error = #expect(throws: CryptoError.self) { try PublicKey(rsaModulus: modulus, exponent: [1, 0, 1]) }
        #expect(error?.message == "the RSA modulus has \(bits) bits, fewer than the 2048 required")
    }

    @Test("a modulus over 8192 bits, an even modulus and unusable exponents are refused")
    func otherBadNumbers() throws {
        let large = #expect(throws: CryptoError.self) {
            try PublicKey(rsaModulus: [UInt8](repeating: 0xFF, count: 1025), exponent: [1, 0, 1])
        }
        #expect(large?.message == "the RSA modulus has 8200 bits, more than the 8192 accepted")
        let even = #expect(throws: CryptoError.self) {
            try PublicKey(rsaModulus: [UInt8](repeating: 0xFF, count: 255) + [0xFE], exponent: [1, 0, 1])
        }
        #expect(even?.message == "the RSA modulus is even")
        let modulus = [UInt8](repeating: 0xFF, count: 256)
        for exponent: [UInt8] in [[], [0], [1], [0, 1], [1, 0, 0], [UInt8](repeating: 0xFF, count: 9)] {
            let error = #expect(throws: CryptoError.self) { try PublicKey(rsaModulus: modulus, exponent: exponent) }
            #expect(error?.message == "the RSA public exponent must be odd, at least 3 and at most 64 bits")
        }
    }

    @Test("a JWK modulus with a leading zero byte and padded base64url is accepted")
    func leadingZeroAndPadding() throws {
        let components = try #require(try Self.publicHalf(try TestRSAKeys.key(3)).rsaComponents)
        let padded = Data([0] + components.modulus).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        #expect(padded.hasSuffix("="))
        let key = try PublicKey(jwkModulus: padded, jwkExponent: "AQAB")
        #expect(key.algorithm == .rsa(bits: 2048))
        #expect(key.rsaComponents?.modulus == components.modulus)
    }

    @Test(
        "documents that are not a JSON key set are refused",
        arguments: [
            ("not json", "the key set is not a JSON object"),
            ("", "the key set is not a JSON object"),
            (#"[{"kty":"RSA"}]"#, "the key set is not a JSON object"),
            (#"{"keys":{"kty":"RSA"}}"#, "the key set has no keys array"),
            (#"{"key":[]}"#, "the key set has no keys array"),
            (#"{"keys":["RSA"]}"#, "keys[0] is not a JSON object"),
            (#"{"keys":[{"kty":"RSA","n":"AQAB"}]}"#, "keys[0] (an RSA key) lacks the string members n and e"),
            (
                #"{"keys":[{"kty":"RSA","n":"AQAB","e":65537}]}"#,
                "keys[0] (an RSA key) lacks the string members n and e"
            ),
            (#"{"keys":[{"kty":"RSA","kid":7,"n":"AQAB","e":"AQAB"}]}"#, "keys[0].kid is not a string"),
            (
                #"{"keys":[{"kty":"RSA","kid":"x","n":"AQAB","e":"AQAB"}]}"#,
                "keys[0] cannot be used: the RSA modulus has 17 bits, fewer than the 2048 required"
            ),
        ])
    func notAKeySet(text: String, message: String) throws {
        let error = #expect(throws: CryptoError.self) { try JSONWebKeySet(json: Array(text.utf8)) }
        #expect(error?.message == message)
    }

    @Test("an empty keys array is a valid, empty set")
    func emptySet() throws {
        #expect(try JSONWebKeySet(json: Array(#"{"keys":[]}"#.utf8)).keys.isEmpty)
    }

    @Test("size, key count and repeated kids are bounded")
    func bounds() throws {
        let components = try #require(try Self.publicHalf(try TestRSAKeys.key(2)).rsaComponents)
        let member: [String: Any] = [
            "kty": "RSA", "kid": "same", "n": Base64URL.encode(components.modulus), "e": "AQAB",
        ]
        let twice = try Self.document([member, member])

        let repeated = #expect(throws: CryptoError.self) { try JSONWebKeySet(json: twice) }
        #expect(repeated?.message == "keys[1] repeats a kid of an earlier key")
        let tooMany = #expect(throws: CryptoError.self) { try JSONWebKeySet(json: twice, maxKeys: 1) }
        #expect(tooMany?.message == "the key set has 2 keys, more than the 1 accepted")
        let tooLarge = #expect(throws: CryptoError.self) { try JSONWebKeySet(json: twice, maxBytes: 100) }
        #expect(tooLarge?.message == "the key set is \(twice.count) bytes, more than the 100 accepted")
        let others = try Self.document(Array(repeating: ["kty": "EC"], count: 33))
        let countsAll = #expect(throws: CryptoError.self) { try JSONWebKeySet(json: others) }
        #expect(countsAll?.message == "the key set has 33 keys, more than the 32 accepted")
    }
}
