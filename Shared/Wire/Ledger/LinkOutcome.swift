/// What a `LinkAccount` call did. Raw values are the wire numbers of
/// `subscriptions.ledger.v1.LinkOutcome`.
///
/// `LINK_OUTCOME_UNSPECIFIED` (0) has no case: `LinkAccountResponse.outcome` is `nil` for it
/// (`LinkOutcome(rawValue: 0)` is `nil`). A number this version does not know becomes
/// `.unknown(number)`.
public enum LinkOutcome: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    case linked
    case alreadyLinked
    case transferred
    case kept
    case refused
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every outcome this version knows, in wire order (no `unknown`).
    public static let allCases: [LinkOutcome] = [.linked, .alreadyLinked, .transferred, .kept, .refused]

    /// The outcome with wire number `rawValue`; `nil` only for 0 (unspecified).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .linked
        case 2: self = .alreadyLinked
        case 3: self = .transferred
        case 4: self = .kept
        case 5: self = .refused
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .linked: 1
        case .alreadyLinked: 2
        case .transferred: 3
        case .kept: 4
        case .refused: 5
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `LINK_OUTCOME_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .linked: "linked"
        case .alreadyLinked: "already_linked"
        case .transferred: "transferred"
        case .kept: "kept"
        case .refused: "refused"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
