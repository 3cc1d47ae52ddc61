import Model

/// When each key (a subscription, a purchase token) is next due, earliest first: a binary heap of
/// (instant, key), ordered by the instant and, at equal instants, by the key, so what is due at
/// one moment happens in the same order every run. A clock move takes the first entry, steps
/// it, and looks at the keys its step wrote again: O(log n) an event, not a look over every key.
///
/// Entries are never searched for: when a key's due instant changes, the new one is added
/// (`schedule`) and the old one stays until it comes first, where it is dropped for no longer
/// matching its key's due instant (stale).
struct DueQueue<Key: Comparable & Hashable & Sendable>: Sendable {
    private struct Entry: Comparable, Sendable {
        let due: Int64
        let key: Key

        static func < (a: Entry, b: Entry) -> Bool { (a.due, a.key) < (b.due, b.key) }
    }

    private var heap = MinHeap<Entry>()

    init() {}

    /// Entries held, stale ones included.
    var count: Int { heap.count }

    /// Adds each key of `keys` at its due instant now, `due(key)`; nil (nothing due, or the key
    /// gone) adds nothing.
    mutating func schedule(_ keys: some Sequence<Key>, due: (Key) -> Int64?) {
        for key in keys {
            guard let instant = due(key) else { continue }
            heap.push(Entry(due: instant, key: key))
        }
    }

    /// Removes and returns the earliest key due at or before `target` whose due instant is still
    /// the one it was queued at, dropping stale entries on the way; nil when nothing is due by
    /// `target`. The caller steps the key and schedules it again (with whatever else the step
    /// wrote).
    mutating func popFirst(notAfter target: Int64, due: (Key) -> Int64?) -> (key: Key, due: Int64)? {
        while let first = heap.first {
            guard due(first.key) == first.due else {
                heap.removeFirst()
                continue
            }
            guard first.due <= target else { return nil }
            heap.removeFirst()
            return (first.key, first.due)
        }
        return nil
    }
}
