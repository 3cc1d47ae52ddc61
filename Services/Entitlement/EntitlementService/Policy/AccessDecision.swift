/// What a subscription, or several, mean for one capability at one instant: allowed until a
/// time (or with no end), or denied with the reason.
///
/// Several subscriptions can grant the same capability (an Apple and a Google subscription, a
/// lifetime unlock beside a monthly plan). Their decisions combine with `union`: any allowed
/// beats every denied; among allowed ones the latest end wins and no end beats any end; when
/// nothing allows, the most informative denial wins (`Denial` lists them from least to most).
public enum AccessDecision: Sendable, Hashable, CustomStringConvertible {
    /// Access until `untilMilliseconds` (exclusive, epoch milliseconds), or with no end when `nil`
    /// (a lifetime purchase, or a subscription with no known end): it lasts unless something
    /// changes.
    case allowed(untilMilliseconds: Int64?)
    /// No access, and why.
    case denied(Denial)

    /// Why access is denied; the wire's `AccessReason` values other than `ACCESS_REASON_GRANTED`. Declared
    /// in the order `union` ranks them, least informative first.
    public enum Denial: Int, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
        /// The capability is not in the policy at all (`ACCESS_REASON_UNKNOWN_CAPABILITY`).
        case unknownCapability
        /// Nothing grants the capability at that instant: no product that grants it, a
        /// consumable, or a purchase made later (`ACCESS_REASON_NO_GRANT`).
        case noGrant
        /// What granted it has ended: the paid period or grace is over (`ACCESS_REASON_EXPIRED`).
        case expired
        /// Refunded or revoked, from the revocation time on (`ACCESS_REASON_REVOKED`).
        case revoked
        /// A subscription is in a state the policy gives no access: billing retry, account hold,
        /// paused, pending (`ACCESS_REASON_STATE_DENIES`). Ranked highest because that subscription is
        /// still alive and access can come back (the user can fix the payment or resume).
        case stateDenies

        public static func < (lhs: Denial, rhs: Denial) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The wire name without `ACCESS_REASON_`, lowercased: `no_grant`, `expired`, ….
        public var description: String {
            switch self {
            case .unknownCapability: "unknown_capability"
            case .noGrant: "no_grant"
            case .expired: "expired"
            case .revoked: "revoked"
            case .stateDenies: "state_denies"
            }
        }
    }

    /// Whether access is allowed.
    public var isAllowed: Bool {
        if case .allowed = self { return true }
        return false
    }

    /// The end of access as the wire writes it (`until_ms`): the end when allowed until a time,
    /// 0 when allowed with no end or when denied.
    public var wireUntilMilliseconds: Int64 {
        if case .allowed(let until?) = self { return until }
        return 0
    }

    /// Whether this decision wins over `other` in a union: allowed over denied; a later end
    /// (or no end) over an earlier one; a more informative denial over a less informative one.
    /// Equal decisions do not outrank each other, so a caller that keeps the first of equals
    /// (and what it rests on) stays stable.
    public func outranks(_ other: AccessDecision) -> Bool {
        switch (self, other) {
        case (.allowed, .denied): true
        case (.denied, .allowed): false
        case (.allowed(let mine), .allowed(let theirs)):
            switch (mine, theirs) {
            case (nil, nil): false
            case (nil, _?): true
            case (_?, nil): false
            case (let mine?, let theirs?): mine > theirs
            }
        case (.denied(let mine), .denied(let theirs)): mine > theirs
        }
    }

    /// The decision of this and `other` together: whichever outranks the other (this one on a tie).
    public func union(_ other: AccessDecision) -> AccessDecision { other.outranks(self) ? other : self }

    /// The decision of all of `decisions` together; `.denied(.noGrant)` when there are none.
    public static func union(_ decisions: some Sequence<AccessDecision>) -> AccessDecision {
        var iterator = decisions.makeIterator()
        guard var result = iterator.next() else { return .denied(.noGrant) }
        while let next = iterator.next() { result = result.union(next) }
        return result
    }

    /// `allowed until 1700000000000`, `allowed with no end` or `denied: expired`.
    public var description: String {
        switch self {
        case .allowed(let until?): "allowed until \(until)"
        case .allowed(nil): "allowed with no end"
        case .denied(let denial): "denied: \(denial)"
        }
    }
}
