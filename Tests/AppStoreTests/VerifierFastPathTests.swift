import Crypto
import Foundation
import TestSupport
import Testing

@testable import AppStore

/// The verifier's fast paths (FlatJSON, remembered headers) give exactly what the general code
/// they stand in for gives.
@Suite("Apple signed data: fast paths agree with the general code")
struct VerifierFastPathTests {
    static let now = AppleHostileInputTests.now
    static let nowMilliseconds = AppleHostileInputTests.nowMilliseconds

    @Test("FlatJSON knows every stored property of the flat payloads")
    func membersCoverEveryProperty() {
        let transaction = Set(Mirror(reflecting: AppleTransaction()).children.compactMap(\.label))
        let renewal = Set(Mirror(reflecting: AppleRenewalInfo()).children.compactMap(\.label))
        #expect(Set(AppleTransaction.members.keys) == transaction)
        #expect(Set(AppleRenewalInfo.members.keys) == renewal)
        #expect(transaction.count == 28)
        #expect(renewal.count == 21)
    }

    static let fullTransaction = #"""
        {"transactionId":"2000001024998954","originalTransactionId":"2000001024993299",\#
        "webOrderLineItemId":"2000000113755461","bundleId":"com.example.app",\#
        "productId":"com.example.monthly","subscriptionGroupIdentifier":"21752814",\#
        "purchaseDate":1759302552000,"originalPurchaseDate":1759301833000,"expiresDate":1759302732000,\#
        "quantity":1,"type":"Auto-Renewable Subscription",\#
        "appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","inAppOwnershipType":"PURCHASED",\#
        "signedDate":1759302518835,"revocationReason":0,"revocationDate":1759302600000,"isUpgraded":false,\#
        "offerType":2,"offerIdentifier":"winback","environment":"Sandbox","storefront":"AUS",\#
        "storefrontId":"143460","transactionReason":"RENEWAL","currency":"AUD","price":1990,\#
        "offerDiscountType":"PAY_AS_YOU_GO","appTransactionId":"704897469903383919","offerPeriod":"P1M",\#
        "advancedCommerceInfo":{"items":[{"SKU":"a","price":1.5,"ok":true,"none":null}],"taxRate":"0.100"}}
        """#

    static let fullRenewal = #"""
        {"originalTransactionId":"2000001024993299","productId":"p","autoRenewProductId":"q",\#
        "autoRenewStatus":1,"expirationIntent":2,"isInBillingRetryPeriod":true,\#
        "gracePeriodExpiresDate":1759302732000,"priceIncreaseStatus":0,"offerType":3,"offerIdentifier":"o",\#
        "signedDate":1759302518835,"environment":"Sandbox","recentSubscriptionStartDate":1759301832000,\#
        "renewalDate":1759302732000,"currency":"AUD","renewalPrice":1990,"offerDiscountType":"FREE_TRIAL",\#
        "eligibleWinBackOfferIds":["a","b"],"appAccountToken":"t","appTransactionId":"704897469903383919",\#
        "offerPeriod":"P1W"}
        """#

    /// FlatJSON's answer is JSONDecoder's, or nil; and nil whenever JSONDecoder throws.
    static func agree<T: FlatJSON.Object & Decodable & Equatable>(_ type: T.Type, _ bytes: [UInt8]) -> Bool? {
        let general = try? JSONDecoder().decode(type, from: Data(bytes))
        guard let fast = FlatJSON.decode(type, from: bytes) else { return nil }
        #expect(fast == general, "\(String(decoding: bytes, as: UTF8.self))")
        return fast == general
    }

    @Test("FlatJSON decodes plain payloads as JSONDecoder does, every field set")
    func plainPayloads() throws {
        #expect(Self.agree(AppleTransaction.self, Array(Self.fullTransaction.utf8)) == true)
        #expect(Self.agree(AppleRenewalInfo.self, Array(Self.fullRenewal.utf8)) == true)
        let transaction = try #require(FlatJSON.decode(AppleTransaction.self, from: Array(Self.fullTransaction.utf8)))
        #expect(transaction.price == 1990 && transaction.isUpgraded == false && transaction.revocationReason == 0)
        let spaced = " \n{ \"price\" : -0 ,\t\"quantity\":null, \"isUpgraded\" : true, \"x\" : [ ] , \"y\":{} }\r\n"
        #expect(Self.agree(AppleTransaction.self, Array(spaced.utf8)) == true)
        #expect(Self.agree(AppleTransaction.self, Array("{}".utf8)) == true)
        for fixture in AppleFixtures.files() + AppleFixtures.lines() {
            let payload = try CompactJWS(fixture.jws).payload
            switch fixture.kind {
            case .transaction: #expect(Self.agree(AppleTransaction.self, payload) == true, "\(fixture.name)")
            case .renewalInfo: #expect(Self.agree(AppleRenewalInfo.self, payload) == true, "\(fixture.name)")
            case .notification: break
            }
        }
    }

    @Test(
        "FlatJSON leaves to JSONDecoder what it does not take",
        arguments: [
            #"{"price":1.0}"#, #"{"price":1e3}"#, #"{"price":"1"}"#, #"{"price":01}"#,
            #"{"price":1234567890123456789}"#,
            #"{"bundleId":"a\"b"}"#, #"{"bundleId":"\u0041"}"#, #"{"bundleId":"é"}"#, #"{"bundleId":1}"#,
            #"{"isUpgraded":1}"#, #"{"bundleId":"a","bundleId":"b"}"#, #"{"x":1e5}"#, #"{"x":"\n"}"#, #"{"x":[1,]}"#,
            #"{"x":1,}"#, #"[]"#, #""x""#, #"{"a":1} x"#, #"{"x":truex}"#, #"{"x":tru}"#, #"{"x":-}"#, #"{"x":.5}"#,
            "{\"bundleId\":\"a\u{7}\"}", #"{"x":"#, #"{"#, "",
            "{\"x\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}",
        ])
    func notTaken(_ text: String) {
        #expect(FlatJSON.decode(AppleTransaction.self, from: Array(text.utf8)) == nil)
    }

    @Test("mutated payloads: FlatJSON answers as JSONDecoder or leaves them to it")
    func mutatedPayloads() {
        var random = SeededGenerator(seed: 3)
        let pieces: [[UInt8]] = [
            Array("\"".utf8), Array(",".utf8), Array("}".utf8), Array("{".utf8), Array("[".utf8), Array("]".utf8),
            Array(":".utf8), Array("1".utf8), Array("0".utf8), Array("-".utf8), Array(".".utf8), Array("e".utf8),
            Array("null".utf8), Array(" ".utf8), Array("\\".utf8), Array("true".utf8),
        ]
        var taken = 0
        for (source, type) in [(Self.fullTransaction, 0), (Self.fullRenewal, 1)] {
            let original = Array(source.utf8)
            for _ in 0..<1500 {
                var bytes = original
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: bytes.remove(at: at)
                    case 1: bytes.insert(contentsOf: pieces.randomElement(using: &random)!, at: at)
                    default: bytes[at] = pieces.randomElement(using: &random)!.first!
                    }
                }
                let agreed =
                    type == 0 ? Self.agree(AppleTransaction.self, bytes) : Self.agree(AppleRenewalInfo.self, bytes)
                if agreed != nil { taken += 1 }
            }
        }
        // Many mutations stay plain JSON (inside strings, digits in numbers) and are taken.
        #expect(taken > 300)
    }

    static func verifier(_ chain: AppleSigningChain, cache: Int = 64, lifetime: Duration = .seconds(900)) throws
        -> AppleSignedDataVerifier
    {
        var configuration = AppleSignedDataVerifier.Configuration(
            bundleID: AppleHostileInputTests.bundleID, environment: .sandbox)
        configuration.cacheCapacity = cache
        configuration.cacheLifetime = lifetime
        return try AppleSignedDataVerifier(anchors: [chain.root], configuration: configuration)
    }

    static func outcome(_ verifier: AppleSignedDataVerifier, _ jws: String, at now: Date = now) -> String {
        do {
            let transaction = try verifier.verifyTransaction(jws, now: now)
            return "valid \(transaction.transactionId ?? "-")"
        } catch {
            return "\(error)"
        }
    }

    @Test("single changed characters get the same answer from a warm verifier (remembered header) and a cold one")
    func warmAndColdAgree() throws {
        let chain = try AppleSigningChain.generate(now: Self.now)
        let good = try chain.sign(AppleHostileInputTests.transaction())
        let warm = try Self.verifier(chain)
        let cold = try Self.verifier(chain, cache: 0)
        #expect(Self.outcome(warm, good) == "valid 2000000001")
        var random = SeededGenerator(seed: 4)
        let characters = Array(good)
        let replacements = Array("AaZz09-_.=+/ ")
        var refused = 0
        for _ in 0..<250 {
            var changed = characters
            let at = Int.random(in: 0..<changed.count, using: &random)
            changed[at] = replacements.randomElement(using: &random)!
            let text = String(changed)
            let answer = Self.outcome(warm, text)
            #expect(answer == Self.outcome(cold, text), "at \(at)")
            if !answer.hasPrefix("valid") { refused += 1 }
        }
        #expect(refused > 200)
        #expect(warm.cachedChains == 1)
        #expect(cold.cachedChains == 0)
    }

    @Test("a pair is cached once whatever header named it; remembered headers go with their pair")
    func rememberedHeaders() throws {
        let chain = try AppleSigningChain.generate(now: Self.now)
        let other = try AppleSigningChain.generate(now: Self.now)
        let verifier = try Self.verifier(chain, cache: 1, lifetime: .seconds(60))
        let apple = try chain.sign(AppleHostileInputTests.transaction())
        // The same pair under a header written differently: x5c first, and another x5c[2].
        let x5c = chain.header["x5c"] as! [String]
        let reordered = try CompactJWS.sign(
            header: Array(#"{"x5c":["\#(x5c[0])","\#(x5c[1])","\#(x5c[0])"],"alg":"ES256"}"#.utf8),
            payload: AppleHostileInputTests.json(AppleHostileInputTests.transaction()), key: chain.leafKey,
            algorithm: .es256)
        for jws in [apple, apple, reordered, reordered, apple] {
            #expect(Self.outcome(verifier, jws) == "valid 2000000001")
            #expect(verifier.cachedChains == 1)
        }
        // Past the lifetime a remembered header is checked in full again, and still verifies.
        #expect(Self.outcome(verifier, apple, at: Self.now.addingTimeInterval(61)) == "valid 2000000001")
        #expect(verifier.cachedChains == 1)
        // A second leaf under the same intermediate evicts the first pair (capacity 1) and its
        // headers with it; the first header then leads to a full check, which passes again.
        let secondKey = try PrivateKey.generate(.p256)
        let secondLeaf = try CertificateIssuer.issue(
            CertificateRequest(
                commonName: "Second StoreKit Signing", notBefore: Self.now.addingTimeInterval(-86_400),
                notAfter: Self.now.addingTimeInterval(86_400), customExtensionOIDs: [AppleSignedDataVerifier.leafOID]),
            subjectKey: secondKey, issuer: chain.intermediate, issuerKey: chain.intermediateKey)
        let second = AppleSigningChain(
            root: chain.root, intermediate: chain.intermediate, leaf: secondLeaf, rootKey: chain.rootKey,
            intermediateKey: chain.intermediateKey, leafKey: secondKey)
        #expect(Self.outcome(verifier, try second.sign(AppleHostileInputTests.transaction())) == "valid 2000000001")
        #expect(verifier.cachedChains == 1)
        let foreign = try other.sign(AppleHostileInputTests.transaction())
        #expect(Self.outcome(verifier, foreign).hasPrefix("bad_chain: "))
        #expect(Self.outcome(verifier, apple) == "valid 2000000001")
    }
}
