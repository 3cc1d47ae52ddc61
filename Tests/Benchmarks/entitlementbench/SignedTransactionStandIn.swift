/// Stand-ins for App Store signed transactions (`signedTransactionInfo`, a JWS in compact form,
/// ES256), the raw data the ledger keeps with each period: one protected header for every
/// transaction (Apple signs them all with one certificate chain, which the header carries in
/// `x5c`; the certificates here are random bytes, shorter than Apple's, so that a whole JWS is
/// about 3 KB), the base64url of the transaction's JSON as the payload, and 64 random bytes as
/// the signature. Nothing verifies them.
struct SignedTransactionStandIn {
    /// The DER lengths of the made-up leaf, intermediate and root certificates.
    static let certificateLengths = [560, 440, 200]
    static let signatureLength = 64

    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The encoded header and its trailing dot.
    private let header: [UInt8]

    init(random: inout FastRandom) {
        let certificates = Self.certificateLengths.map { length in
            // A DER certificate is a SEQUENCE with a two-byte length.
            var der: [UInt8] = [
                0x30, 0x82, UInt8(truncatingIfNeeded: (length - 4) >> 8), UInt8(truncatingIfNeeded: length - 4),
            ]
            der += Self.randomBytes(length - 4, &random)
            var text: [UInt8] = []
            Self.appendBase64(der, alphabet: Self.standard, padded: true, to: &text)
            return "\"" + String(decoding: text, as: UTF8.self) + "\""
        }
        let json = "{\"alg\":\"ES256\",\"x5c\":[" + certificates.joined(separator: ",") + "]}"
        var header: [UInt8] = []
        Self.appendBase64(Array(json.utf8), alphabet: Self.urlSafe, padded: false, to: &header)
        header.append(UInt8(ascii: "."))
        self.header = header
    }

    /// The JWS of `payload` (the transaction's JSON).
    func signed(_ payload: String, random: inout FastRandom) -> String {
        var bytes: [UInt8] = []
        let payloadLength = (payload.utf8.count * 4 + 2) / 3
        bytes.reserveCapacity(header.count + payloadLength + 1 + (Self.signatureLength * 4 + 2) / 3)
        bytes += header
        var json = payload
        json.withUTF8 { Self.appendBase64($0, alphabet: Self.urlSafe, padded: false, to: &bytes) }
        bytes.append(UInt8(ascii: "."))
        Self.appendBase64(
            Self.randomBytes(Self.signatureLength, &random), alphabet: Self.urlSafe, padded: false, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func randomBytes(_ count: Int, _ random: inout FastRandom) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            var word = random.next()
            for _ in 0..<8 {
                bytes.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        bytes.removeLast(bytes.count - count)
        return bytes
    }

    /// Appends the base64 of `bytes` in `alphabet`, with `=` padding when `padded`.
    private static func appendBase64(
        _ bytes: some Collection<UInt8>, alphabet: [UInt8], padded: Bool, to out: inout [UInt8]
    ) {
        var bits: UInt32 = 0
        var held = 0
        for byte in bytes {
            bits = bits << 8 | UInt32(byte)
            held += 1
            if held == 3 {
                out.append(alphabet[Int(bits >> 18 & 63)])
                out.append(alphabet[Int(bits >> 12 & 63)])
                out.append(alphabet[Int(bits >> 6 & 63)])
                out.append(alphabet[Int(bits & 63)])
                bits = 0
                held = 0
            }
        }
        guard held > 0 else { return }
        bits <<= 8 * UInt32(3 - held)
        out.append(alphabet[Int(bits >> 18 & 63)])
        out.append(alphabet[Int(bits >> 12 & 63)])
        if held == 2 { out.append(alphabet[Int(bits >> 6 & 63)]) }
        if padded { out += Array(repeating: UInt8(ascii: "="), count: 3 - held) }
    }
}

/// The decoded payload of an App Store signed transaction of the benchmark's monthly product,
/// with the fields and value shapes Apple sends (`JWSTransactionDecodedPayload`).
struct AppleTransactionJSON {
    var transactionID: String
    var originalTransactionID: String
    var webOrderLineItemID: String
    var purchase: Int64
    var originalPurchase: Int64
    var expires: Int64
    var signed: Int64
    var appAccountToken: String
    /// A renewal rather than the first purchase.
    var renewal: Bool
    var appTransactionID: String

    /// The JSON text.
    var text: String {
        #"""
        {"transactionId":"\#(transactionID)","originalTransactionId":"\#(originalTransactionID)",\#
        "webOrderLineItemId":"\#(webOrderLineItemID)","bundleId":"\#(PurchaseWorkload.bundle)",\#
        "productId":"\#(PurchaseWorkload.appleProduct)",\#
        "subscriptionGroupIdentifier":"\#(PurchaseWorkload.appleGroup)","purchaseDate":\#(purchase),\#
        "originalPurchaseDate":\#(originalPurchase),"expiresDate":\#(expires),"quantity":1,\#
        "type":"Auto-Renewable Subscription","appAccountToken":"\#(appAccountToken)",\#
        "inAppOwnershipType":"PURCHASED","signedDate":\#(signed),"environment":"Production",\#
        "transactionReason":"\#(renewal ? "RENEWAL" : "PURCHASE")","storefront":"USA",\#
        "storefrontId":"143441","price":9990,"currency":"USD","appTransactionId":"\#(appTransactionID)"}
        """#
    }
}
