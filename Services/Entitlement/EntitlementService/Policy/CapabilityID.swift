/// A capability of one `ProductPolicy`, interned to a small number: its position in the
/// policy's `capabilities`, which are sorted by name. Two policies with the same `version` give
/// every capability the same id; after a reload, ids from the old policy mean nothing.
public struct CapabilityID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The position of the capability in `ProductPolicy.capabilities`.
    public let rawValue: UInt16

    /// The capability at position `rawValue` of a policy's `capabilities`.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static func < (lhs: CapabilityID, rhs: CapabilityID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "#\(rawValue)" }
}
