/// What one change of the ledger's change feed is about. Raw values are the wire numbers of
/// `subscriptions.ledger.v1.ChangeKind`.
///
/// `CHANGE_KIND_UNSPECIFIED` (0) has no case: `Change.kind` is `nil` for it
/// (`ChangeKind(rawValue: 0)` is `nil`). A number this version does not know becomes
/// `.unknown(number)`, so a reader can skip changes it does not understand.
public enum ChangeKind: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    case subscription
    case link
    case unlink
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every kind this version knows, in wire order (no `unknown`).
    public static let allCases: [ChangeKind] = [.subscription, .link, .unlink]

    /// The kind with wire number `rawValue`; `nil` only for 0 (unspecified).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .subscription
        case 2: self = .link
        case 3: self = .unlink
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .subscription: 1
        case .link: 2
        case .unlink: 3
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `CHANGE_KIND_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .subscription: "subscription"
        case .link: "link"
        case .unlink: "unlink"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
