/// Where a notification stands in the ledger's inbox. Raw values are the wire numbers of
/// `subscriptions.ledger.v1.InboxStatus`.
///
/// `INBOX_STATUS_UNSPECIFIED` (0) has no case: fields hold `InboxStatus?` and `nil` is
/// unspecified (`InboxStatus(rawValue: 0)` is `nil`). A number this version does not know becomes
/// `.unknown(number)` and is passed on unchanged.
public enum InboxStatus: Sendable, Hashable, CaseIterable, RawRepresentable, CustomStringConvertible {
    case pending
    case processed
    case failed
    /// Refused before it could be trusted; kept for audit, never processed.
    case rejected
    /// A non-zero wire number this version does not know. Never holds a known number.
    case unknown(Int32)

    /// Every status this version knows, in wire order (no `unknown`).
    public static let allCases: [InboxStatus] = [.pending, .processed, .failed, .rejected]

    /// The status with wire number `rawValue`; `nil` only for 0 (unspecified).
    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .pending
        case 2: self = .processed
        case 3: self = .failed
        case 4: self = .rejected
        default: self = .unknown(rawValue)
        }
    }

    /// The wire number.
    public var rawValue: Int32 {
        switch self {
        case .pending: 1
        case .processed: 2
        case .failed: 3
        case .rejected: 4
        case .unknown(let number): number
        }
    }

    /// The proto value name without its `INBOX_STATUS_` prefix, lowercased; `unknown(n)` otherwise.
    public var description: String {
        switch self {
        case .pending: "pending"
        case .processed: "processed"
        case .failed: "failed"
        case .rejected: "rejected"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
