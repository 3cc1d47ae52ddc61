import Model
import Wire

/// A `subscriptions.common.v1.Subscription` as the view reads it: the fields it keeps, read in
/// place from the serialized message (texts are views of its bytes, valid while they are). A
/// snapshot brings a million of them; unpacking each whole message into a `Subscription` first
/// cost more than keeping it.
///
/// The reading is as strict as `Subscription(serialized:)` on what the view keeps: the key is
/// required with a known store and environment, the state must be one this version knows, texts
/// must be UTF-8 (without NUL), and a field of the wrong wire type is malformed. Fields the view
/// does not keep are skipped unread. `WireSubscriptionTests` holds the field numbers to the
/// schema: every field set, read back equal.
struct WireSubscription {
    typealias Text = UnsafeBufferPointer<UInt8>

    /// A period of `periods` as the view keeps it.
    struct WirePeriod {
        var productID: Text = WireSubscription.empty
        var basePlanID: Text?
        var start: Int64 = 0
        var end: Int64 = 0
        var revoked: Int64 = 0
        /// `OfferType`'s wire number, 0 for none.
        var offer: UInt64 = 0
    }

    /// An interval of `status_intervals` as the view keeps it.
    struct WireStatus: Equatable {
        var state: SubscriptionState?
        var start: Int64 = 0
        var end: Int64 = 0
    }

    var store = Store.apple
    var environment = StoreEnvironment.production
    var storeID: Text = Self.empty
    var accountID: Text?
    var productID: Text = Self.empty
    var basePlanID: Text?
    /// `ProductKind`'s wire number, 0 for unspecified.
    var productKind: Int32 = 0
    var state: SubscriptionState?
    var purchase: Int64 = 0
    var expires: Int64 = 0
    var grace: Int64 = 0
    var revoked: Int64 = 0
    var isReplaced = false
    /// Apple Family Sharing: a family member's, not the buyer's.
    var isFamilyShared = false
    /// The app's bundle id or package name, when given.
    var bundleOrPackage: Text?
    var periodCount = 0
    var lastPeriod: WirePeriod?
    var statusCount = 0
    var renewal = GrantRenewal()
    var renewalOffProductCount = 0
    /// The whole message, to find its repeated fields again.
    let bytes: UnsafeRawBufferPointer

    static var empty: Text { Text(start: nil, count: 0) }

    /// Reads `bytes`; throws `ViewError` (`malformed`, or `overBudget` past `maxRepeated`) saying what is wrong.
    init(_ bytes: UnsafeRawBufferPointer, maxRepeated: Int) throws(ViewError) {
        self.bytes = bytes
        var hasKey = false
        var installmentsCommitted: Int32 = 0
        var installmentsRemaining: Int32 = 0
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            switch (field.number, field.value) {
            case (1, .bytes(let key)):
                // Given twice, the last one stands whole, as protobuf-c reads it.
                try readKey(key)
                hasKey = true
            case (2, .bytes(let text)): accountID = try Self.optionalText(text, "account_id")
            case (3, .bytes(let text)): productID = try Self.text(text, "product_id")
            case (4, .bytes(let text)): basePlanID = try Self.optionalText(text, "base_plan_id")
            case (6, .varint(let value)): productKind = Int32(truncatingIfNeeded: value)
            case (7, .varint(let value)): state = try Self.enumValue(value, "state")
            case (8, .varint(let value)): isFamilyShared = value == UInt64(Ownership.familyShared.rawValue)
            case (9, .varint(let value)): purchase = Int64(bitPattern: value)
            case (11, .varint(let value)): expires = Int64(bitPattern: value)
            case (12, .varint(let value)): grace = Int64(bitPattern: value)
            case (13, .varint(let value)): revoked = Int64(bitPattern: value)
            case (15, .varint(let value)): renewal.autoRenew = value != 0
            case (16, .bytes(let text)):
                renewal.autoRenewProductID = try Self.optionalText(text, "auto_renew_product_id").map(Self.string)
            case (21, .bytes(let text)): isReplaced = try Self.optionalText(text, "replaced_by_store_id") != nil
            case (23, .bytes(let text)): bundleOrPackage = try Self.optionalText(text, "bundle_or_package")
            case (25, .bytes(let period)):
                periodCount += 1
                guard periodCount <= maxRepeated else { throw Self.tooMany("periods", maxRepeated) }
                lastPeriod = try Self.period(period)
            case (26, .varint(let value)): renewal.offerType = try Self.enumValue(value, "offer_type")
            case (27, .bytes(let text)):
                renewal.renewalOfferID = try Self.optionalText(text, "renewal_offer_id").map(Self.string)
            case (28, .varint(let value)): renewal.renewalOfferType = try Self.enumValue(value, "renewal_offer_type")
            case (29, .varint(let value)): renewal.expirationReason = try Self.enumValue(value, "expiration_reason")
            case (30, .varint(let value)): renewal.inBillingRetry = value != 0
            case (31, .varint(let value)): renewal.renewalTimeMilliseconds = Self.nonZero(value)
            case (32, .bytes(let text)):
                renewal.storefront = try Self.optionalText(text, "storefront").map(Self.string)
            case (33, .varint(let value)): renewal.priceMicros = Self.nonZero(value)
            case (34, .bytes(let text)): renewal.currency = try Self.optionalText(text, "currency").map(Self.string)
            case (35, .bytes(let text)):
                _ = try Self.text(text, "renewal_off_products")
                renewalOffProductCount += 1
                guard renewalOffProductCount <= maxRepeated else {
                    throw Self.tooMany("renewal_off_products", maxRepeated)
                }
            case (36, .varint(let value)): installmentsCommitted = Int32(truncatingIfNeeded: value)
            case (37, .varint(let value)): installmentsRemaining = Int32(truncatingIfNeeded: value)
            case (38, .bytes(let interval)):
                statusCount += 1
                guard statusCount <= maxRepeated else { throw Self.tooMany("status_intervals", maxRepeated) }
                _ = try Self.status(interval)
            case (1...39, _): try Self.checkSkipped(field.number, field.value)
            default: break  // a field this version does not know
            }
        }
        guard !reader.isMalformed else { throw Self.malformed("Subscription") }
        guard hasKey else { throw ViewError(.malformed, "Subscription.key is missing") }
        if installmentsCommitted != 0 {
            renewal.installmentsCommitted = installmentsCommitted
            renewal.installmentsRemaining = installmentsRemaining
        }
    }

    /// Calls `body` with each period of `periods`, in order.
    func forEachPeriod(_ body: (WirePeriod) -> Void) {
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            // Read once already: every period is well-formed.
            if field.number == 25, case .bytes(let period) = field.value, let read = try? Self.period(period) {
                body(read)
            }
        }
    }

    /// Calls `body` with each interval of `status_intervals`, in order.
    func forEachStatus(_ body: (WireStatus) -> Void) {
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            // Read once already: every interval is well-formed.
            if field.number == 38, case .bytes(let interval) = field.value, let read = try? Self.status(interval) {
                body(read)
            }
        }
    }

    /// Calls `body` with each text of `renewal_off_products`, in order.
    func forEachRenewalOffProduct(_ body: (String) -> Void) {
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            if field.number == 35, case .bytes(let text) = field.value { body(Self.string(Self.buffer(text))) }
        }
    }

    private mutating func readKey(_ bytes: UnsafeRawBufferPointer) throws(ViewError) {
        var storeNumber: UInt64 = 0
        var environmentNumber: UInt64 = 0
        var id = Self.empty
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            switch (field.number, field.value) {
            case (1, .varint(let value)): storeNumber = value
            case (2, .varint(let value)): environmentNumber = value
            case (3, .bytes(let text)): id = try Self.text(text, "key.store_id")
            case (1...3, _): throw Self.wrongType("SubscriptionKey", field.number)
            default: break
            }
        }
        guard !reader.isMalformed else { throw Self.malformed("SubscriptionKey") }
        guard let store = Self.known(Store.self, storeNumber) else {
            throw ViewError(.malformed, "Subscription.key.store is \(Self.describe(storeNumber))")
        }
        guard let environment = Self.known(StoreEnvironment.self, environmentNumber) else {
            throw ViewError(.malformed, "Subscription.key.environment is \(Self.describe(environmentNumber))")
        }
        self.store = store
        self.environment = environment
        storeID = id
    }

    private static func period(_ bytes: UnsafeRawBufferPointer) throws(ViewError) -> WirePeriod {
        var period = WirePeriod()
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            switch (field.number, field.value) {
            case (2, .bytes(let value)): period.productID = try text(value, "periods.product_id")
            case (3, .bytes(let value)): period.basePlanID = try optionalText(value, "periods.base_plan_id")
            case (4, .varint(let value)): period.start = Int64(bitPattern: value)
            case (5, .varint(let value)): period.end = Int64(bitPattern: value)
            case (6, .varint(let value)): period.offer = value
            case (7, .varint(let value)): period.revoked = Int64(bitPattern: value)
            case (1, .bytes), (8, .bytes), (11, .bytes), (9, .varint), (10, .varint), (12, .varint): break
            case (1...12, _): throw wrongType("Period", field.number)
            default: break
            }
        }
        guard !reader.isMalformed else { throw malformed("Period") }
        return period
    }

    private static func status(_ bytes: UnsafeRawBufferPointer) throws(ViewError) -> WireStatus {
        var status = WireStatus()
        var reader = ProtoWireReader(bytes)
        while let field = reader.next() {
            switch (field.number, field.value) {
            case (1, .varint(let value)): status.state = try enumValue(value, "status_intervals.state")
            case (2, .varint(let value)): status.start = Int64(bitPattern: value)
            case (3, .varint(let value)): status.end = Int64(bitPattern: value)
            case (4, .varint), (5, .varint): break
            case (1...5, _): throw wrongType("StatusInterval", field.number)
            default: break
            }
        }
        guard !reader.isMalformed else { throw malformed("StatusInterval") }
        return status
    }

    /// A field the view does not keep must still have its schema's wire type.
    private static func checkSkipped(_ number: UInt64, _ value: ProtoWireReader.Value) throws(ViewError) {
        // Subscription's texts and messages; every other field of 1...39 is a varint.
        let isText: Bool
        switch number {
        case 1, 2, 3, 4, 5, 14, 16, 20, 21, 22, 23, 24, 25, 27, 32, 34, 35, 38: isText = true
        default: isText = false
        }
        switch value {
        case .bytes where isText: return
        case .varint where !isText: return
        default: throw wrongType("Subscription", number)
        }
    }

    private static func buffer(_ bytes: UnsafeRawBufferPointer) -> Text {
        Text(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    }

    /// The text, checked to be UTF-8 without NUL (a C string of it says all of it).
    private static func text(_ bytes: UnsafeRawBufferPointer, _ field: String) throws(ViewError) -> Text {
        let text = buffer(bytes)
        var ascii = true
        for byte in text where byte >= 0x80 || byte == 0 {
            guard byte != 0 else { throw ViewError(.malformed, "Subscription.\(field) holds a NUL byte") }
            ascii = false
        }
        if !ascii, String(validating: text, as: UTF8.self) == nil {
            throw ViewError(.malformed, "Subscription.\(field) is not valid UTF-8")
        }
        return text
    }

    /// `text`, nil for empty (absent).
    private static func optionalText(_ bytes: UnsafeRawBufferPointer, _ field: String) throws(ViewError) -> Text? {
        let read = try text(bytes, field)
        return read.isEmpty ? nil : read
    }

    static func string(_ text: Text) -> String { String(decoding: text, as: UTF8.self) }

    private static func nonZero(_ value: UInt64) -> Int64? { value == 0 ? nil : Int64(bitPattern: value) }

    private static func known<E: RawRepresentable>(_: E.Type, _ number: UInt64) -> E? where E.RawValue == Int32 {
        number == 0 ? nil : E(rawValue: Int32(truncatingIfNeeded: number))
    }

    /// The enum value, nil for 0 (unspecified); throws for a number a closed enum does not know.
    private static func enumValue<E: RawRepresentable>(_ number: UInt64, _ field: String) throws(ViewError) -> E?
    where E.RawValue == Int32 {
        guard number != 0 else { return nil }
        guard let value = E(rawValue: Int32(truncatingIfNeeded: number)) else {
            throw ViewError(
                .malformed, "Subscription.\(field) has unknown value \(Int32(truncatingIfNeeded: number))")
        }
        return value
    }

    private static func describe(_ number: UInt64) -> String {
        number == 0 ? "unspecified" : "unknown value \(Int32(truncatingIfNeeded: number))"
    }

    private static func malformed(_ message: String) -> ViewError {
        ViewError(.malformed, "a \(message) is not well-formed protobuf")
    }

    private static func wrongType(_ message: String, _ number: UInt64) -> ViewError {
        ViewError(.malformed, "\(message) field \(number) has the wrong wire type")
    }

    private static func tooMany(_ field: String, _ limit: Int) -> ViewError {
        ViewError(.overBudget, "Subscription.\(field): more than \(limit) elements")
    }
}
