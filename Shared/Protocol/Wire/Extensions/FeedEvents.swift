import Model

/// The events a change of the ledger's feed brings: one for each normalized lifecycle event it
/// carries, with an id made of the change's position and the event's place in it, so that the
/// same change always gives the same events. The entitlement service's event publisher logs
/// them; `subctl events verify` checks the log against them.
public enum FeedEvents {
    /// The id of the `index`-th event of the change at `position`.
    public static func id(position: UInt64, index: Int) -> String { "evt_\(position)_\(index)" }

    /// The feed position in an id of the shape `id(position:index:)` gives (`evt_<position>_<index>`,
    /// both decimal); nil for any other id, such as an access event's or a test event's.
    public static func position(ofID id: String) -> UInt64? {
        let parts = id.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "evt", parts[2].isDecimal, parts[1].isDecimal else { return nil }
        return UInt64(parts[1])
    }

    /// The events of `change`, in its order, each on the trace its lifecycle event was recorded
    /// under.
    public static func events(of change: Change) -> [Event] {
        change.events.enumerated().map { index, lifecycle in
            // An account event (a merge, a deletion) is about no subscription.
            let about = lifecycle.key.storeID.isEmpty ? nil : lifecycle.key
            let subscription = change.subscription.flatMap { $0.key == about ? $0 : nil }
            return Event(
                id: id(position: change.position, index: index), type: EventType.name(of: lifecycle.kind ?? .other),
                accountID: lifecycle.accountID ?? subscription?.accountID, key: about, position: change.position,
                storeTimeMilliseconds: lifecycle.storeTimeMilliseconds,
                recordedTimeMilliseconds: change.committedTimeMilliseconds, subscription: subscription,
                otherAccountID: lifecycle.otherAccountID, storeType: lifecycle.storeType,
                storeSubtype: lifecycle.storeSubtype, traceID: lifecycle.traceID)
        }
    }
}

extension Substring {
    /// One or more of the ASCII digits 0-9 and nothing else.
    fileprivate var isDecimal: Bool { !isEmpty && utf8.allSatisfy { (0x30...0x39).contains($0) } }
}
