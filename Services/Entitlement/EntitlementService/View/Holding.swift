import Model

/// One subscription as the view keeps it: what access decisions and grants need, in 64 bytes.
/// Times are Unix epoch milliseconds with 0 for absent.
///
/// A subscription the ledger recorded periods for (`isPeriodic`) keeps its last period inline
/// (`purchase` its start, `expires` its end, `revoked` its revocation, `product` its product)
/// and the earlier ones as a chain of `PeriodRecord`s from `earlier`; one that lasts a year of
/// renewals of one product is one period and needs no chain.
struct Holding: BitwiseCopyable, Sendable {
    /// The store id as a number (`keyBits` without `textID`), or its text's arena reference.
    var id: UInt64
    var purchase: Int64
    var expires: Int64
    var grace: Int64
    var revoked: Int64
    /// Index into the view's product table (store, product id, base plan).
    var product: UInt32
    /// The holding account's index + 1; 0 when no account holds it.
    var owner: UInt32
    /// The owner's next holding's index + 1; 0 for the last.
    var next: UInt32
    /// The first earlier period's index + 1 in the view's period records; 0 for none.
    var earlier: UInt32 = 0
    /// Its renewal details' index + 1 in the view's interned renewal profiles; 0 for none.
    var renewal: UInt32 = 0
    /// Store (bits 0-1), environment (bits 2-3), `textID`, `replaced`, `periodic` and
    /// `familyShared`.
    var keyBits: UInt8
    /// `ProductKind.rawValue`, 0 for none (255 stands for any kind above 254).
    var kind: UInt8
    /// `SubscriptionState.rawValue`, 0 for none.
    var state: UInt8
    /// The last period's offer (`PeriodRecord.offerCode`), in what was padding.
    var offer: UInt8 = 0

    static let textID: UInt8 = 1 << 4
    static let replaced: UInt8 = 1 << 5
    /// Judged by its periods (`AccessRules.decision(periods:…)`), not by its state alone.
    static let periodic: UInt8 = 1 << 6
    /// Apple Family Sharing: held by a family member of the buyer.
    static let familyShared: UInt8 = 1 << 7
    /// The bits that are part of the key (store, environment, text or number).
    static let keyMask: UInt8 = 0x1F

    var isReplaced: Bool { keyBits & Self.replaced != 0 }
    var isPeriodic: Bool { keyBits & Self.periodic != 0 }
    var hasTextID: Bool { keyBits & Self.textID != 0 }
    var isFamilyShared: Bool { keyBits & Self.familyShared != 0 }
    var store: Store { Store(rawValue: Int32(keyBits & 0x3)) ?? .apple }
    var environment: StoreEnvironment { StoreEnvironment(rawValue: Int32(keyBits >> 2 & 0x3)) ?? .production }
    var subscriptionState: SubscriptionState? { state == 0 ? nil : SubscriptionState(rawValue: Int32(state)) }

    /// What the access rule reads.
    var facts: AccessFacts {
        AccessFacts(
            productKind: kind == 0 ? nil : ProductKind(rawValue: Int32(kind)), state: subscriptionState,
            purchase: Self.time(purchase), expires: Self.time(expires), grace: Self.time(grace),
            revoked: Self.time(revoked), replaced: isReplaced)
    }

    static func time(_ value: Int64) -> Int64? { value == 0 ? nil : value }
}

/// An account as the view keeps it, in 24 bytes.
struct AccountRecord: BitwiseCopyable, Sendable {
    /// A UUID's high half, or the text's arena reference.
    var high: UInt64
    /// A UUID's low half; 0 for a text.
    var low: UInt64
    /// The first holding's index + 1; 0 for none.
    var first: UInt32
    var isText: Bool
    /// The account lost its last subscription: its id is erased and no lookup finds it.
    var isForgotten = false
}

/// A period of a subscription before its last one, in 32 bytes.
struct PeriodRecord: BitwiseCopyable, Sendable {
    var start: Int64
    /// 0 for no end.
    var end: Int64
    /// 0 for not revoked.
    var revoked: Int64
    /// Index into the view's product table (`productIndex`) and the period's offer in bits 28-30
    /// (`offerCode`); for a status interval, `statusFlag` and the state's wire number (`revoked`
    /// then unused).
    var product: UInt32
    /// The next (later) period's index + 1; 0 after the last earlier one.
    var next: UInt32

    /// Marks a record that holds a status interval (grace, retry, hold, pause) after the periods.
    static let statusFlag: UInt32 = 1 << 31

    static let offerShift: UInt32 = 28

    /// A period's index into the view's product table.
    var productIndex: UInt32 { product & 0x0FFF_FFFF }

    /// A period's offer, as `offerCode` keeps it.
    var offer: OfferType? { Self.offer(UInt8(truncatingIfNeeded: product >> Self.offerShift & 0x7)) }

    /// A period record of `product` (an index) bought under offer `offer` (an `offerCode`).
    static func product(_ index: UInt32, offer: UInt8) -> UInt32 { index | UInt32(offer & 0x7) << offerShift }

    /// An offer type's wire number in three bits: 0 for none, 7 for one this version does not know.
    static func offerCode(_ wire: UInt64) -> UInt8 { wire == 0 ? 0 : wire < 7 ? UInt8(wire) : 7 }

    /// The offer type of `offerCode`'s three bits.
    static func offer(_ code: UInt8) -> OfferType? { code == 0 ? nil : OfferType(rawValue: Int32(code)) }

    /// The state of a status interval's record; nil for a period's.
    var status: SubscriptionState? {
        product & Self.statusFlag == 0 ? nil : SubscriptionState(rawValue: Int32(product & ~Self.statusFlag))
    }
}
