/// A field's bound as `proto/` states it (a `limit:` line of the field's comment): of a
/// string's length in UTF-8 bytes, or of a repeated field's number of items. wiregen generates
/// one per stated limit, as `<Message>.Limits.<field>` (`<field>Count` for items), from the same
/// line as the OpenAPI document's `minLength`/`maxLength`; the services check requests against
/// these, so the documents and the checks cannot disagree.
public struct FieldLimit: Sendable, Hashable, CustomStringConvertible {
    /// What is counted.
    public enum Unit: Sendable, Hashable {
        /// A string's UTF-8 bytes (each element's, for a repeated string field).
        case bytes
        /// A repeated field's elements.
        case items
    }

    /// The proto field name (`idempotency_key`), as messages name the field.
    public let field: String
    /// The counts allowed, both ends included (a minimum of 0: the field may be empty or absent).
    public let range: ClosedRange<Int>
    public let unit: Unit

    /// The limit of `field`: `range` of `unit` (generated code makes these; a test may too).
    public init(_ field: String, _ range: ClosedRange<Int>, _ unit: Unit) {
        self.field = field
        self.range = range
        self.unit = unit
    }

    /// The fewest bytes or items allowed.
    public var minimum: Int { range.lowerBound }
    /// The most bytes or items allowed.
    public var maximum: Int { range.upperBound }

    /// Whether `text`'s length in UTF-8 bytes is within the bounds.
    public func admits(_ text: String) -> Bool { range.contains(text.utf8.count) }

    /// Whether `count` items are within the bounds.
    public func admits(count: Int) -> Bool { range.contains(count) }

    /// The bounds in words: `1 to 128 bytes`, `at most 1024 bytes`, `at most 100 items`.
    public var description: String {
        let unit = self.unit == .bytes ? "bytes" : "items"
        return minimum == 0 ? "at most \(maximum) \(unit)" : "\(minimum) to \(maximum) \(unit)"
    }

    /// The refusal of a value out of bounds: `idempotency_key must be 1 to 128 bytes`.
    public var requirement: String { "\(field) must be \(self)" }
}
