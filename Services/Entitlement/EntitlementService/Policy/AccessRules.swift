public import Model

/// Which normalized subscription states give access, one yes or no per state: the `access`
/// lines of a policy file over the defaults of docs/stores.md.
///
/// The defaults: `active` yes, `cancelled` yes (paid through the period), `grace_period` yes,
/// `billing_retry` no, `account_hold` no, `paused` no, `expired` no, `revoked` no, `pending` no.
/// `expired`, `revoked` and `pending` can never be switched to yes (`canAllow`). How long an
/// allowed state lasts is not a rule but a fact of the subscription; `decision(for:at:)` applies
/// both.
public struct AccessRules: Sendable, Hashable, CustomStringConvertible {
    /// Bit `state.rawValue` set: the state gives access.
    private var allowedStates: UInt16

    /// The rules of docs/stores.md, in force for every state a policy file does not mention.
    public static let `default` = AccessRules(
        allowedStates: SubscriptionState.allCases.reduce(0) { mask, state in
            state.grantsAccessByDefault ? mask | (1 << UInt16(state.rawValue)) : mask
        })

    private init(allowedStates: UInt16) { self.allowedStates = allowedStates }

    /// Whether a policy may give `state` access: every state but `expired`, `revoked` and
    /// `pending` (nothing was paid for, or what was paid for has ended or been taken back).
    public static func canAllow(_ state: SubscriptionState) -> Bool {
        switch state {
        case .expired, .revoked, .pending: false
        case .active, .cancelled, .gracePeriod, .billingRetry, .accountHold, .paused: true
        }
    }

    /// Whether a subscription in `state` has access under these rules (for as long as its dates say).
    public func allows(_ state: SubscriptionState) -> Bool { allowedStates & (1 << UInt16(state.rawValue)) != 0 }

    /// These rules with `state` giving access or not. Allowing a state that `canAllow` refuses
    /// is a programming error (a policy file gets a `PolicyError` for it instead).
    public func setting(_ state: SubscriptionState, allowed: Bool) -> AccessRules {
        precondition(!allowed || Self.canAllow(state), "\(state) can never give access")
        let bit: UInt16 = 1 << UInt16(state.rawValue)
        return AccessRules(allowedStates: allowed ? allowedStates | bit : allowedStates & ~bit)
    }

    /// Every state with its rule, as `access` lines write it: `active yes, cancelled yes, …`.
    public var description: String {
        SubscriptionState.allCases.map { "\($0) \(allows($0) ? "yes" : "no")" }.joined(separator: ", ")
    }
}
