/// Why access is allowed or not: `subscriptions.entitlement.v1.Reason`. `REASON_UNSPECIFIED`
/// (0) has no case; a number this version does not know is `.unknown(number)`.
public enum AccessReason: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    case granted
    case noGrant
    case expired
    case revoked
    case stateDenies
    case unknownCapability
    case unknown(Int32)

    public init?(rawValue: Int32) {
        switch rawValue {
        case 0: return nil
        case 1: self = .granted
        case 2: self = .noGrant
        case 3: self = .expired
        case 4: self = .revoked
        case 5: self = .stateDenies
        case 6: self = .unknownCapability
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: Int32 {
        switch self {
        case .granted: 1
        case .noGrant: 2
        case .expired: 3
        case .revoked: 4
        case .stateDenies: 5
        case .unknownCapability: 6
        case .unknown(let number): number
        }
    }

    /// The proto name without `REASON_`, lowercased.
    public var description: String {
        switch self {
        case .granted: "granted"
        case .noGrant: "no_grant"
        case .expired: "expired"
        case .revoked: "revoked"
        case .stateDenies: "state_denies"
        case .unknownCapability: "unknown_capability"
        case .unknown(let number): "unknown(\(number))"
        }
    }
}
