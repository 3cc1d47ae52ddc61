/// Who holds a purchase: the buyer, or a family member it is shared with. Raw values are the
/// wire numbers of `subscriptions.common.v1.Ownership`.
///
/// `OWNERSHIP_UNSPECIFIED` (0) has no case: `nil` where an ownership may be missing
/// (`Ownership(rawValue: 0)` is `nil`). Unknown non-zero numbers become `.unknown(number)`.
public enum Ownership: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    case purchased
    /// Apple Family Sharing: access lasts as long as the owner's, until a REVOKE.
    case familyShared
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every ownership this version knows, in wire order (no `unknown`).
    public static let allCases: [Ownership] = [.purchased, .familyShared]

    /// The ownership with wire number `rawValue`; `nil` only for 0 (unspecified).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .purchased
        case 2: self = .familyShared
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .purchased: 1
        case .familyShared: 2
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `OWNERSHIP_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .purchased: "purchased"
        case .familyShared: "family_shared"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
