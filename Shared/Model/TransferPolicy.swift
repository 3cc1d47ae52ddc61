/// What a second account's claim on an already linked subscription does. Raw values are the
/// wire numbers of `subscriptions.common.v1.TransferPolicy`.
///
/// `TRANSFER_POLICY_UNSPECIFIED` (0), "the ledger's configured default", has no case: it is
/// `nil` where a policy is held (`TransferPolicy(rawValue: 0)` is `nil`). Unknown non-zero
/// numbers become `.unknown(number)`.
public enum TransferPolicy: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    /// The subscription moves to the claiming account.
    case transfer
    /// The subscription stays with the account that holds it.
    case keep
    /// The claim is refused.
    case refuse
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every policy this version knows, in wire order (no `unknown`).
    public static let allCases: [TransferPolicy] = [.transfer, .keep, .refuse]

    /// The policy with wire number `rawValue`; `nil` only for 0 (the configured default).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .transfer
        case 2: self = .keep
        case 3: self = .refuse
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .transfer: 1
        case .keep: 2
        case .refuse: 3
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `TRANSFER_POLICY_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .transfer: "transfer"
        case .keep: "keep"
        case .refuse: "refuse"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
