/// A dictionary that notes every key written through it (added, changed in place, removed), so
/// a `DueQueue` can look at those keys' due instants again without looking at the others.
struct WatchedDictionary<Key: Hashable & Sendable, Value: Sendable>: Sequence, ExpressibleByDictionaryLiteral,
    Sendable
{
    private var storage: [Key: Value]
    /// The keys written since the last `takeWritten()`.
    private var written: Set<Key> = []

    init(dictionaryLiteral elements: (Key, Value)...) {
        storage = Dictionary(uniqueKeysWithValues: elements)
    }

    subscript(key: Key) -> Value? {
        get { storage[key] }
        set {
            storage[key] = newValue
            written.insert(key)
        }
    }

    var values: Dictionary<Key, Value>.Values { storage.values }
    var count: Int { storage.count }

    func makeIterator() -> Dictionary<Key, Value>.Iterator { storage.makeIterator() }

    /// Notes `key` as written without writing it.
    mutating func noteWritten(_ key: Key) { written.insert(key) }

    /// The keys written since the last call, forgotten here.
    mutating func takeWritten() -> Set<Key> {
        defer { written = [] }
        return written
    }
}
