import Crypto
public import Model
public import Wire

/// Access events: what each account may use, announced as it changes. A pure state machine over
/// the feed and time: told each account's access after each change (`observe`), it answers the
/// `access.granted`, `access.extended` and `access.ended` events the change makes; told the time
/// (`due`), it answers the `access.ended` events of access that ran out with no change at all —
/// a cancelled subscription reaching its end, a grant's last day. Replayed over the same changes
/// and times it answers the same events with the same ids.
public struct AccessEventTracker: Sendable {
    /// An account's access to one capability, as the view decides it at an instant.
    public enum Access: Sendable, Equatable {
        /// Allowed until `until` (nil: no end), resting on the subscription or grant `key`.
        case allowed(until: Int64?, key: SubscriptionKey?)
        /// Denied: `reason` is `expired`, `revoked`, `state` or `unlinked` (nothing the account
        /// holds grants it any more: moved to another account, or deleted).
        case denied(reason: String)
    }

    struct Slot: Hashable, Sendable, Comparable {
        let account: String
        let capability: String
        static func < (a: Slot, b: Slot) -> Bool { (a.account, a.capability) < (b.account, b.capability) }
    }

    struct Announced: Sendable, Equatable {
        var until: Int64?
        /// The change whose event announced it.
        var position: UInt64
        var key: SubscriptionKey?
    }

    private(set) var announced: [Slot: Announced] = [:]
    /// The announced ends, to find what ran out: a binary min-heap by (end, slot). An end that
    /// a later announcement replaced stays until its time and is then passed over.
    private var ends = MinHeap<End>()

    struct End: Sendable, Comparable {
        let until: Int64
        let slot: Slot
        static func < (a: End, b: End) -> Bool { (a.until, a.slot) < (b.until, b.slot) }
    }

    public init() {}

    /// The id of the access event of `type` for one account and capability, from the change at
    /// `position`: at most one such event exists per change.
    public static func id(position: UInt64, type: String, account: String, capability: String) -> String {
        let digest = Digest.sha256Hex(Array("\(type)\u{0}\(account)\u{0}\(capability)".utf8))
        return "evt_\(position)_\(type.dropFirst("access.".count))_\(digest.prefix(16))"
    }

    /// The events of `account`'s access after the change at `position`, recorded at `at`:
    /// `access` holds each capability the account's holdings decide (one not in it is
    /// `denied(unlinked)` when it was announced). In capability order.
    public mutating func observe(
        account: String, position: UInt64, at: Int64, access: [String: Access]
    ) -> [Event] {
        var capabilities = Set(access.keys)
        for slot in announced.keys where slot.account == account { capabilities.insert(slot.capability) }
        var events: [Event] = []
        for capability in capabilities.sorted() {
            let slot = Slot(account: account, capability: capability)
            let now = access[capability] ?? .denied(reason: "unlinked")
            let before = announced[slot]
            switch (before, now) {
            case (nil, .allowed(let until, let key)):
                announce(slot, Announced(until: until, position: position, key: key))
                events.append(event(EventType.accessGranted, slot, position, at, until: until, key: key))
            case (let previous?, .allowed(let until, let key)):
                guard previous.until != until else {
                    announced[slot]?.key = key
                    continue
                }
                announce(slot, Announced(until: until, position: position, key: key))
                events.append(event(EventType.accessExtended, slot, position, at, until: until, key: key))
            case (let previous?, .denied(let reason)):
                withdraw(slot)
                events.append(event(EventType.accessEnded, slot, position, at, reason: reason, key: previous.key))
            case (nil, .denied):
                continue
            }
        }
        return events
    }

    /// The `access.ended` (expired) events of access whose announced end is at or before `now`,
    /// soonest first; each is recorded at its end and names the change that announced it.
    public mutating func due(now: Int64) -> [Event] {
        var events: [Event] = []
        while let first = ends.removeFirst(if: { $0.until <= now }) {
            guard let current = announced[first.slot], current.until == first.until else { continue }
            announced[first.slot] = nil
            events.append(
                event(
                    EventType.accessEnded, first.slot, current.position, first.until, reason: "expired",
                    key: current.key))
        }
        return events
    }

    /// The soonest announced end, when `due` next has something to say.
    public mutating func nextEnd() -> Int64? {
        while let first = ends.first, announced[first.slot]?.until != first.until { ends.removeFirst() }
        return ends.first?.until
    }

    /// Takes `access` as announced before (from the ledger's record, when another instance
    /// computed the events so far).
    public mutating func restore(_ access: [AnnouncedAccess]) {
        for entry in access {
            announce(
                Slot(account: entry.accountID, capability: entry.capability),
                Announced(until: entry.untilMilliseconds, position: entry.position, key: entry.key))
        }
    }

    /// The accounts with access announced, by the subscription it rests on.
    public func accountsByKey() -> [SubscriptionKey: Set<String>] {
        var accounts: [SubscriptionKey: Set<String>] = [:]
        for (slot, value) in announced {
            if let key = value.key { accounts[key, default: []].insert(slot.account) }
        }
        return accounts
    }

    /// How many accounts and capabilities have access announced.
    public var count: Int { announced.count }

    private mutating func announce(_ slot: Slot, _ value: Announced) {
        announced[slot] = value
        guard let until = value.until else { return }
        ends.push(End(until: until, slot: slot))
    }

    private mutating func withdraw(_ slot: Slot) {
        announced[slot] = nil
    }

    private func event(
        _ type: String, _ slot: Slot, _ position: UInt64, _ at: Int64, until: Int64? = nil, reason: String? = nil,
        key: SubscriptionKey?
    ) -> Event {
        Event(
            id: Self.id(position: position, type: type, account: slot.account, capability: slot.capability),
            type: type, accountID: slot.account, key: key, position: position, recordedTimeMilliseconds: at,
            capability: slot.capability, accessUntilMilliseconds: until, reason: reason)
    }
}
