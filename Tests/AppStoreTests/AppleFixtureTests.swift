import AppStore
import Crypto
import Foundation
import Testing

/// Every real App Store payload verifies against Apple Root CA - G3 and decodes to what its
/// name says; any changed byte makes it fail.
@Suite(
    "Apple signed data: real payloads",
    .enabled(if: AppleFixtures.available, Comment(rawValue: AppleFixtures.skipMessage)))
struct AppleFixtureTests {
    static func verifier(cache: Int = 64) throws -> AppleSignedDataVerifier {
        var configuration = AppleSignedDataVerifier.Configuration(
            bundleID: AppleFixtures.bundleID, environment: .sandbox)
        configuration.cacheCapacity = cache
        return try AppleSignedDataVerifier(
            anchors: [try X509Certificate(der: try AppleFixtures.rootDER())], configuration: configuration)
    }

    /// Verifies `payload` as its kind and checks the type and subtype it decodes to.
    static func verifyAndCheck(_ payload: AppleFixtures.Payload, with verifier: AppleSignedDataVerifier) throws {
        switch payload.kind {
        case .notification:
            let notification = try verifier.verifyNotification(payload.jws)
            #expect(notification.notificationType.rawValue == payload.notificationType)
            #expect(notification.subtype?.rawValue == payload.subtype)
            #expect(notification.notificationType.isKnown)
            #expect(!notification.notificationUUID.isEmpty)
        case .transaction:
            let transaction = try verifier.verifyTransaction(payload.jws)
            #expect(transaction.bundleId == AppleFixtures.bundleID)
            #expect(transaction.transactionId != nil && transaction.originalTransactionId != nil)
            #expect(transaction.type == "Auto-Renewable Subscription")
        case .renewalInfo:
            let info = try verifier.verifyRenewalInfo(payload.jws)
            #expect(info.originalTransactionId != nil && info.autoRenewStatus != nil)
        }
    }

    @Test(
        "each single .jws file verifies and decodes to the type and subtype its name gives",
        arguments: AppleFixtures.files())
    func files(_ payload: AppleFixtures.Payload) throws {
        try Self.verifyAndCheck(payload, with: try Self.verifier())
    }

    @Test("all 42 lines of the lifecycle file verify, cold and through a warm cache")
    func lifecycle() throws {
        let lines = AppleFixtures.lines()
        #expect(lines.count == 42)
        let cold = try Self.verifier(cache: 0)
        let warm = try Self.verifier()
        for line in lines {
            try Self.verifyAndCheck(line, with: cold)
            try Self.verifyAndCheck(line, with: warm)
            try Self.verifyAndCheck(line, with: warm)
        }
        #expect(cold.cachedChains == 0)
        #expect(warm.cachedChains >= 1)
    }

    @Test("the September TEST notification verifies at its signedDate although its leaf has expired since")
    func expiredLeafStillVerifiesAtSignedDate() throws {
        let test = try #require(AppleFixtures.files().first { $0.name.hasPrefix("TEST_") })
        let notification = try Self.verifier().verifyNotification(test.jws, now: Date())
        #expect(notification.notificationType == .test)
        #expect(notification.data?.bundleId == AppleFixtures.bundleID)
    }

    @Test(
        "one changed byte in the header, payload or signature of any payload is refused",
        arguments: AppleFixtures.files() + AppleFixtures.lines())
    func tampered(_ payload: AppleFixtures.Payload) throws {
        let verifier = try Self.verifier()
        let segments = payload.jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for segment in 0..<3 {
            // A character in the middle of the segment, swapped for another base64url character.
            var characters = Array(segments[segment])
            let index = characters.count / 2
            characters[index] = characters[index] == "A" ? "B" : "A"
            var changed = segments
            changed[segment] = String(characters)
            let text = changed.joined(separator: ".")
            #expect(throws: AppleVerificationError.self, "\(payload.name), segment \(segment)") {
                switch payload.kind {
                case .notification: _ = try verifier.verifyNotification(text)
                case .transaction: _ = try verifier.verifyTransaction(text)
                case .renewalInfo: _ = try verifier.verifyRenewalInfo(text)
                }
            }
        }
    }

    @Test(
        "checked at the current time (as with online checks), the September TEST notification's expired leaf is refused"
    )
    func currentTimeValidation() throws {
        var configuration = AppleSignedDataVerifier.Configuration(
            bundleID: AppleFixtures.bundleID, environment: .sandbox)
        configuration.validateAtCurrentTime = true
        let verifier = try AppleSignedDataVerifier(
            anchors: [try X509Certificate(der: try AppleFixtures.rootDER())], configuration: configuration)
        let test = try #require(AppleFixtures.files().first { $0.name.hasPrefix("TEST_") })
        #expect {
            _ = try verifier.verifyNotification(test.jws, now: Date(timeIntervalSince1970: 1_790_000_000))
        } throws: { ($0 as? AppleVerificationError)?.code == .badCertificate }
    }

    @Test("a Production verifier refuses the real sandbox payloads as the wrong environment")
    func sandboxIsNotProduction() throws {
        var configuration = AppleSignedDataVerifier.Configuration(
            bundleID: AppleFixtures.bundleID, environment: .production, appAppleID: AppleFixtures.appAppleID)
        configuration.cacheCapacity = 8
        let verifier = try AppleSignedDataVerifier(
            anchors: [try X509Certificate(der: try AppleFixtures.rootDER())], configuration: configuration)
        let transaction = try #require(AppleFixtures.files().first { $0.kind == .transaction })
        #expect {
            _ = try verifier.verifyTransaction(transaction.jws)
        } throws: { ($0 as? AppleVerificationError)?.code == .wrongEnvironment }
    }
}
