import AppStore
import Crypto
import Foundation
import Testing

/// A generated chain shaped like Apple's drives hostile variants of signed data; each one is
/// refused with its own code.
@Suite("Apple signed data: hostile input")
struct AppleHostileInputTests {
    static let bundleID = "com.example.app"
    static let appAppleID: Int64 = 12345
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static var nowMilliseconds: Int64 { Int64(now.timeIntervalSince1970 * 1000) }

    enum Target { case sandbox, production }
    enum Kind { case transaction, notification }

    struct Variant {
        let name: String
        let target: Target
        let kind: Kind
        let jws: String
        let expected: AppleVerificationError.Code
    }

    static func transaction(environment: String = "Sandbox") -> [String: any Sendable] {
        [
            "bundleId": bundleID, "environment": environment, "transactionId": "2000000001",
            "originalTransactionId": "2000000001", "productId": "com.example.monthly",
            "type": "Auto-Renewable Subscription", "signedDate": nowMilliseconds,
            "expiresDate": nowMilliseconds + 86_400_000,
        ]
    }

    static func notification(environment: String = "Production", appAppleID: Int64? = AppleHostileInputTests.appAppleID)
        -> [String: any Sendable]
    {
        var data: [String: any Sendable] = ["bundleId": bundleID, "environment": environment, "status": 1]
        if let appAppleID { data["appAppleId"] = appAppleID }
        return [
            "notificationType": "DID_RENEW", "notificationUUID": "0b9ef2a5-5f5e-4a83-8b3b-0c6fa58c1f2e",
            "version": "2.0", "signedDate": nowMilliseconds, "data": data,
        ]
    }

    static func json(_ object: [String: any Sendable]) -> [UInt8] {
        [UInt8](try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Replaces one segment of a compact JWS.
    static func replacing(_ jws: String, segment: Int, with text: String) -> String {
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[segment] = text
        return parts.joined(separator: ".")
    }

    static func signature(of jws: String) -> [UInt8] {
        Base64URL.decode(jws.split(separator: ".", omittingEmptySubsequences: false)[2])!
    }

    static func variants(chain: AppleSigningChain) throws -> [Variant] {
        var variants: [Variant] = []
        func add(
            _ name: String, _ expected: AppleVerificationError.Code, _ jws: String, target: Target = .sandbox,
            kind: Kind = .transaction
        ) {
            variants.append(Variant(name: name, target: target, kind: kind, jws: jws, expected: expected))
        }
        let good = try chain.sign(transaction())
        let x5c = chain.header["x5c"] as! [String]

        // The algorithm.
        for alg in ["none", "RS256", "ES384", "HS256", "es256", ""] {
            add(
                "alg \"\(alg)\"", .unsupportedAlgorithm,
                try chain.sign(transaction(), header: ["alg": alg, "x5c": x5c]))
        }
        add("no alg", .unsupportedAlgorithm, try chain.sign(transaction(), header: ["x5c": x5c]))
        add("alg is a number", .unsupportedAlgorithm, try chain.sign(transaction(), header: ["alg": 7, "x5c": x5c]))

        // The certificate array.
        add("no x5c", .badChain, try chain.sign(transaction(), header: ["alg": "ES256"]))
        add("x5c empty", .badChain, try chain.sign(transaction(), header: ["alg": "ES256", "x5c": [String]()]))
        add(
            "x5c of one", .badChain,
            try chain.sign(transaction(), header: ["alg": "ES256", "x5c": Array(x5c.prefix(1))]))
        add(
            "x5c of two", .badChain,
            try chain.sign(transaction(), header: ["alg": "ES256", "x5c": Array(x5c.prefix(2))]))
        add("x5c of four", .badChain, try chain.sign(transaction(), header: ["alg": "ES256", "x5c": x5c + [x5c[2]]]))
        add("x5c a string", .badChain, try chain.sign(transaction(), header: ["alg": "ES256", "x5c": x5c[0]]))
        add(
            "x5c[0] not base64", .badCertificate,
            try chain.sign(transaction(), header: ["alg": "ES256", "x5c": ["***", x5c[1], x5c[2]]]))
        add(
            "x5c[0] base64 of no certificate", .badCertificate,
            try chain.sign(transaction(), header: ["alg": "ES256", "x5c": ["AAECAwQF", x5c[1], x5c[2]]]))
        add(
            "x5c[1] base64 of no certificate", .badCertificate,
            try chain.sign(transaction(), header: ["alg": "ES256", "x5c": [x5c[0], "AAECAwQF", x5c[2]]]))
        add(
            "x5c[0] an entry of the wrong type", .badCertificate,
            try chain.sign(transaction(), header: ["alg": "ES256", "x5c": [5, x5c[1], x5c[2]] as [any Sendable]]))
        add(
            "leaf and intermediate swapped", .badCertificate,
            try chain.sign(transaction(), header: ["alg": "ES256", "x5c": [x5c[1], x5c[0], x5c[2]]]))

        // Chains that are not Apple's shape or do not lead to the anchor.
        add("a foreign root", .badChain, try AppleSigningChain.generate(now: now).sign(transaction()))
        var options = AppleSigningChain.Options()
        options.leafOID = false
        add(
            "leaf without Apple's OID", .badCertificate,
            try AppleSigningChain.generate(now: now, options: options).sign(transaction()))
        options = AppleSigningChain.Options()
        options.intermediateOID = false
        add(
            "intermediate without Apple's OID", .badCertificate,
            try AppleSigningChain.generate(now: now, options: options).sign(transaction()))
        options = AppleSigningChain.Options()
        options.leafKind = .p384
        // ES256 cannot be made with a P-384 key: the signature comes from another key, as it
        // never gets looked at.
        add(
            "a P-384 leaf key", .badCertificate,
            try CompactJWS.sign(
                header: json(try AppleSigningChain.generate(now: now, options: options).header),
                payload: json(transaction()), key: try PrivateKey.generate(.p256), algorithm: .es256))
        add(
            "a foreign chain with the trusted root in x5c[2]", .badChain,
            try {
                let foreign = try AppleSigningChain.generate(now: now)
                var header = foreign.header
                header["x5c"] = [
                    (foreign.header["x5c"] as! [String])[0], (foreign.header["x5c"] as! [String])[1], x5c[2],
                ]
                return try foreign.sign(transaction(), header: header)
            }())
        // The other chains' roots are not anchors; those below share the trusted root.
        let expired = try chainUnderTrustedRoot(
            chain, leafNotBefore: now.addingTimeInterval(-3 * 86_400), leafNotAfter: now.addingTimeInterval(-86_400))
        add("leaf expired before signedDate", .badCertificate, try expired.sign(transaction()))
        let early = try chainUnderTrustedRoot(
            chain, leafNotBefore: now.addingTimeInterval(86_400), leafNotAfter: now.addingTimeInterval(3 * 86_400))
        add("leaf not yet valid at signedDate", .badCertificate, try early.sign(transaction()))
        add(
            "a leaf signed by the root itself, bypassing x5c[1]", .badChain,
            try leafSignedByRoot(chain).sign(transaction()))

        // The signature.
        let der = try chain.leafKey.signSHA256(Array(good.split(separator: ".")[0...1].joined(separator: ".").utf8))
        add("a DER signature", .badSignature, replacing(good, segment: 2, with: Base64URL.encode(der)))
        var raw = signature(of: good)
        add(
            "R zero", .badSignature,
            replacing(good, segment: 2, with: Base64URL.encode([UInt8](repeating: 0, count: 32) + raw[32...])))
        add(
            "S zero", .badSignature,
            replacing(good, segment: 2, with: Base64URL.encode(raw[..<32] + [UInt8](repeating: 0, count: 32))))
        add(
            "a signature of 63 bytes", .badSignature,
            replacing(good, segment: 2, with: Base64URL.encode(raw.dropLast())))
        add("a signature of 65 bytes", .badSignature, replacing(good, segment: 2, with: Base64URL.encode(raw + [1])))
        add(
            "a signature of zeros", .badSignature,
            replacing(good, segment: 2, with: Base64URL.encode([UInt8](repeating: 0, count: 64))))
        raw[10] ^= 0x01
        add("a flipped signature bit", .badSignature, replacing(good, segment: 2, with: Base64URL.encode(raw)))
        let otherKey = try PrivateKey.generate(.p256)
        let headerBytes = json(chain.header)
        add(
            "signed by another key", .badSignature,
            try CompactJWS.sign(header: headerBytes, payload: json(transaction()), key: otherKey, algorithm: .es256))
        var richer = transaction()
        richer["productId"] = "com.example.yearly"
        add(
            "payload swapped after signing", .badSignature,
            replacing(good, segment: 1, with: Base64URL.encode(json(richer))))
        var extraHeader = chain.header
        extraHeader["kid"] = "x"
        add(
            "header swapped after signing", .badSignature,
            replacing(good, segment: 0, with: Base64URL.encode(json(extraHeader))))

        // The claims.
        var other = transaction()
        other["bundleId"] = "com.example.other"
        add("another bundle", .wrongApp, try chain.sign(other))
        other = transaction()
        other["bundleId"] = nil
        add("no bundleId", .malformed, try chain.sign(other))
        add(
            "Production data at the Sandbox endpoint", .wrongEnvironment,
            try chain.sign(transaction(environment: "Production")))
        add(
            "no environment", .malformed,
            try chain.sign(
                {
                    var t = transaction()
                    t["environment"] = nil
                    return t
                }()))
        add(
            "Xcode data in Production", .wrongEnvironment, try chain.sign(notification(environment: "Xcode")),
            target: .production, kind: .notification)
        add(
            "LocalTesting data in Production", .wrongEnvironment,
            try chain.sign(notification(environment: "LocalTesting")),
            target: .production, kind: .notification)
        add(
            "Sandbox data in Production", .wrongEnvironment, try chain.sign(notification(environment: "Sandbox")),
            target: .production, kind: .notification)
        add(
            "another appAppleId in Production", .wrongApp, try chain.sign(notification(appAppleID: 999)),
            target: .production, kind: .notification)
        add(
            "no appAppleId in Production", .wrongApp, try chain.sign(notification(appAppleID: nil)),
            target: .production, kind: .notification)
        add(
            "a notification without notificationUUID", .malformed,
            try chain.sign(
                {
                    var n = notification()
                    n["notificationUUID"] = nil
                    return n
                }()), target: .production,
            kind: .notification)

        // Shape.
        add("oversized input", .malformed, String(repeating: "A", count: 70_000) + "." + good)
        add("not base64url", .malformed, replacing(good, segment: 1, with: "eyJ*"))
        add(
            "padded base64", .malformed, replacing(good, segment: 1, with: Base64URL.encode(json(transaction())) + "==")
        )
        add("two segments", .malformed, good.split(separator: ".").prefix(2).joined(separator: "."))
        add("four segments", .malformed, good + ".AAAA")
        add("empty input", .malformed, "")
        add("an empty signature", .malformed, replacing(good, segment: 2, with: ""))
        add("header not JSON", .malformed, replacing(good, segment: 0, with: Base64URL.encode(Array("not json".utf8))))
        add("payload not JSON", .malformed, try chain.sign(payload: Array("not json".utf8)))
        add("payload a JSON array", .malformed, try chain.sign(payload: Array("[1,2]".utf8)))
        add(
            "signedDate a string", .malformed,
            try chain.sign(
                {
                    var t = transaction()
                    t["signedDate"] = "yesterday"
                    return t
                }()))
        add(
            "expiresDate a string", .malformed,
            try chain.sign(
                {
                    var t = transaction()
                    t["expiresDate"] = "soon"
                    return t
                }()))
        return variants
    }

    /// A leaf (with the OID and the given validity) under a fresh intermediate of `chain`'s root.
    static func chainUnderTrustedRoot(_ chain: AppleSigningChain, leafNotBefore: Date, leafNotAfter: Date) throws
        -> AppleSigningChain
    {
        let leafKey = try PrivateKey.generate(.p256)
        let leaf = try CertificateIssuer.issue(
            CertificateRequest(
                commonName: "Test StoreKit Signing", notBefore: leafNotBefore, notAfter: leafNotAfter,
                customExtensionOIDs: [AppleSignedDataVerifier.leafOID]),
            subjectKey: leafKey, issuer: chain.intermediate, issuerKey: chain.intermediateKey)
        return AppleSigningChain(
            root: chain.root, intermediate: chain.intermediate, leaf: leaf, rootKey: chain.rootKey,
            intermediateKey: chain.intermediateKey, leafKey: leafKey)
    }

    /// A leaf with the OID issued straight by the root, presented with the real intermediate.
    static func leafSignedByRoot(_ chain: AppleSigningChain) throws -> AppleSigningChain {
        let leafKey = try PrivateKey.generate(.p256)
        let leaf = try CertificateIssuer.issue(
            CertificateRequest(
                commonName: "Test StoreKit Signing", notBefore: now.addingTimeInterval(-86_400),
                notAfter: now.addingTimeInterval(86_400), customExtensionOIDs: [AppleSignedDataVerifier.leafOID]),
            subjectKey: leafKey, issuer: chain.root, issuerKey: chain.rootKey)
        return AppleSigningChain(
            root: chain.root, intermediate: chain.intermediate, leaf: leaf, rootKey: chain.rootKey,
            intermediateKey: chain.intermediateKey, leafKey: leafKey)
    }

    static func verifiers(_ chain: AppleSigningChain) throws -> (
        sandbox: AppleSignedDataVerifier, production: AppleSignedDataVerifier
    ) {
        let sandbox = try AppleSignedDataVerifier(
            anchors: [chain.root], configuration: .init(bundleID: bundleID, environment: .sandbox))
        let production = try AppleSignedDataVerifier(
            anchors: [chain.root],
            configuration: .init(bundleID: bundleID, environment: .production, appAppleID: appAppleID))
        return (sandbox, production)
    }

    @Test("the unaltered transaction and notification of the generated chain verify")
    func controls() throws {
        let chain = try AppleSigningChain.generate(now: Self.now)
        let (sandbox, production) = try Self.verifiers(chain)
        let transaction = try sandbox.verifyTransaction(try chain.sign(Self.transaction()), now: Self.now)
        #expect(transaction.productId == "com.example.monthly")
        #expect(transaction.expiresDate == Self.nowMilliseconds + 86_400_000)
        let notification = try production.verifyNotification(try chain.sign(Self.notification()), now: Self.now)
        #expect(notification.notificationType == .didRenew)
        #expect(notification.data?.status == 1)
        // A Production transaction carries no appAppleId (Apple puts it in notifications only).
        let live = try production.verifyTransaction(
            try chain.sign(Self.transaction(environment: "Production")), now: Self.now)
        #expect(live.environment == "Production" && live.productId == "com.example.monthly")
    }

    @Test("a Production app transaction needs the configured appAppleId; its receiptType is its environment")
    func appTransaction() throws {
        let chain = try AppleSigningChain.generate(now: Self.now)
        let (sandbox, production) = try Self.verifiers(chain)
        func signed(_ receiptType: String, _ appAppleID: Int64?) throws -> String {
            var payload: [String: any Sendable] = [
                "bundleId": Self.bundleID, "receiptType": receiptType, "signedDate": Self.nowMilliseconds,
                "appVersion": "1.0", "originalApplicationVersion": "1.0",
            ]
            if let appAppleID { payload["appAppleId"] = appAppleID }
            return try chain.sign(payload)
        }
        _ = try production.verifyAppTransaction(try signed("Production", Self.appAppleID), now: Self.now)
        _ = try sandbox.verifyAppTransaction(try signed("Sandbox", nil), now: Self.now)
        for (jws, code) in [
            (try signed("Production", 1), AppleVerificationError.Code.wrongApp),
            (try signed("Production", nil), .wrongApp), (try signed("Sandbox", nil), .wrongEnvironment),
        ] {
            let error = #expect(throws: AppleVerificationError.self) {
                _ = try production.verifyAppTransaction(jws, now: Self.now)
            }
            #expect(error?.code == code)
        }
    }

    @Test("at least 40 hostile variants are each refused with their own code, and the message names no payload")
    func hostileVariants() throws {
        let chain = try AppleSigningChain.generate(now: Self.now)
        let (sandbox, production) = try Self.verifiers(chain)
        let variants = try Self.variants(chain: chain)
        #expect(variants.count >= 40)
        for variant in variants {
            let verifier = variant.target == .sandbox ? sandbox : production
            do {
                switch variant.kind {
                case .transaction: _ = try verifier.verifyTransaction(variant.jws, now: Self.now)
                case .notification: _ = try verifier.verifyNotification(variant.jws, now: Self.now)
                }
                Issue.record("\(variant.name): accepted")
            } catch {
                #expect(error.code == variant.expected, "\(variant.name): \(error)")
                #expect(error.message.count < 300, "\(variant.name): the message is \(error.message.count) characters")
                #expect(variant.jws.isEmpty || !error.message.contains(variant.jws.prefix(40)), "\(variant.name)")
            }
        }
    }

    @Test("a warm cache still checks each payload's time against the chain's validity")
    func cacheChecksValidity() throws {
        let chain = try AppleSigningChain.generate(now: Self.now)
        let (sandbox, _) = try Self.verifiers(chain)
        _ = try sandbox.verifyTransaction(try chain.sign(Self.transaction()), now: Self.now)
        #expect(sandbox.cachedChains == 1)
        var late = Self.transaction()
        late["signedDate"] = Self.nowMilliseconds + 20 * 365 * 86_400_000
        #expect {
            _ = try sandbox.verifyTransaction(try chain.sign(late), now: Self.now)
        } throws: { ($0 as? AppleVerificationError)?.code == .badCertificate }
    }

    @Test("a Production verifier needs the app's Apple id")
    func productionNeedsAppID() throws {
        let chain = try AppleSigningChain.generate(now: Self.now)
        #expect {
            _ = try AppleSignedDataVerifier(
                anchors: [chain.root], configuration: .init(bundleID: Self.bundleID, environment: .production))
        } throws: { ($0 as? AppleVerificationError)?.code == .wrongApp }
    }
}
