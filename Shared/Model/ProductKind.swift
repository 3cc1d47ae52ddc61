/// What kind of product a purchase is. Raw values are the wire numbers of
/// `subscriptions.common.v1.ProductKind`.
///
/// `PRODUCT_KIND_UNSPECIFIED` (0) has no case: where a kind may be missing it is held as an
/// optional and `nil` means unspecified (`ProductKind(rawValue: 0)` is `nil`). A number this
/// version does not know, from a newer peer, becomes `.unknown(number)` and is passed on unchanged.
public enum ProductKind: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    case autoRenewable
    case nonRenewing
    case nonConsumable
    case consumable
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every kind this version knows, in wire order (no `unknown`).
    public static let allCases: [ProductKind] = [.autoRenewable, .nonRenewing, .nonConsumable, .consumable]

    /// The kind with wire number `rawValue`; `nil` only for 0 (unspecified).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .autoRenewable
        case 2: self = .nonRenewing
        case 3: self = .nonConsumable
        case 4: self = .consumable
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .autoRenewable: 1
        case .nonRenewing: 2
        case .nonConsumable: 3
        case .consumable: 4
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `PRODUCT_KIND_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .autoRenewable: "auto_renewable"
        case .nonRenewing: "non_renewing"
        case .nonConsumable: "non_consumable"
        case .consumable: "consumable"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
