public import Model
public import Wire

/// The events a change of the ledger's feed brings: one for each normalized lifecycle event it
/// carries, with an id made of the change's position and the event's place in it, so that the
/// same change always gives the same events.
public enum FeedEvents {
    /// The id of the `index`-th event of the change at `position`.
    public static func id(position: UInt64, index: Int) -> String { "evt_\(position)_\(index)" }

    /// The events of `change`, in its order.
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
                storeSubtype: lifecycle.storeSubtype)
        }
    }
}
