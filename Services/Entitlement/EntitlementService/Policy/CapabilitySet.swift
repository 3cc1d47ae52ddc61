/// The capabilities one product grants under a `ProductPolicy`: sorted, without repeats.
///
/// The policy builds one set per product when it loads and hands out that same set on every
/// lookup, so many subscriptions of one product share one array.
public struct CapabilitySet: Sendable, Hashable, RandomAccessCollection, CustomStringConvertible {
    private let ids: [CapabilityID]

    /// The set that grants nothing.
    public static let empty = CapabilitySet(sortedUnique: [])

    /// The set of `ids`, in any order and with any repeats.
    public init(_ ids: some Sequence<CapabilityID>) {
        var sorted = Array(ids)
        sorted.sort()
        var unique: [CapabilityID] = []
        unique.reserveCapacity(sorted.count)
        for id in sorted where unique.last != id { unique.append(id) }
        self.ids = unique
    }

    private init(sortedUnique: [CapabilityID]) { self.ids = sortedUnique }

    public var startIndex: Int { ids.startIndex }
    public var endIndex: Int { ids.endIndex }
    public subscript(position: Int) -> CapabilityID { ids[position] }

    /// Whether the set holds `id` (a binary search; no allocation).
    public func contains(_ id: CapabilityID) -> Bool {
        var low = 0
        var high = ids.count
        while low < high {
            let middle = (low + high) / 2
            if ids[middle] < id {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low < ids.count && ids[low] == id
    }

    /// The capabilities in this set or in `other`.
    public func union(_ other: CapabilitySet) -> CapabilitySet {
        if other.isEmpty { return self }
        if isEmpty { return other }
        return CapabilitySet(ids + other.ids)
    }

    public var description: String { "[" + ids.map(\.description).joined(separator: ", ") + "]" }
}
