/// A binary min-heap: `first` is the least element by `<`, `push` and `removeFirst` cost
/// O(log n). The services' timers, the entitlement service's announced ends and the simulator's
/// due moments are queued in it.
///
/// Elements that are equal by `<` come out in no set order: an element that needs one (the same
/// order every run) compares by a tiebreak of its own, as a timer by its id.
public struct MinHeap<Element: Comparable> {
    @usableFromInline var elements: [Element] = []

    @inlinable public init() {}

    /// A heap of `elements`.
    @inlinable public init(_ elements: some Sequence<Element>) {
        // A sorted array is a heap.
        self.elements = elements.sorted()
    }

    /// The least element, or nil when the heap is empty.
    @inlinable public var first: Element? { elements.first }

    @inlinable public var count: Int { elements.count }

    @inlinable public var isEmpty: Bool { elements.isEmpty }

    /// Every element, in no particular order.
    @inlinable public var unordered: [Element] { elements }

    @inlinable public mutating func push(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard elements[child] < elements[parent] else { return }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the least element, or nil when the heap is empty.
    @inlinable @discardableResult public mutating func removeFirst() -> Element? {
        guard let least = elements.first else { return nil }
        let last = elements.removeLast()
        guard !elements.isEmpty else { return least }
        elements[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < elements.count else { break }
            let right = left + 1
            let child = right < elements.count && elements[right] < elements[left] ? right : left
            guard elements[child] < elements[parent] else { break }
            elements.swapAt(child, parent)
            parent = child
        }
        return least
    }

    /// Removes and returns the least element when `isDue` holds for it; nil otherwise.
    @inlinable public mutating func removeFirst(if isDue: (Element) -> Bool) -> Element? {
        guard let least = elements.first, isDue(least) else { return nil }
        return removeFirst()
    }

    @inlinable public mutating func removeAll() { elements.removeAll() }

    /// Keeps only the elements `isKept` holds for.
    @inlinable public mutating func filter(_ isKept: (Element) -> Bool) {
        self = MinHeap(elements.filter(isKept))
    }
}

extension MinHeap: Sendable where Element: Sendable {}
