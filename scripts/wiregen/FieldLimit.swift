/// A bound `proto/` states for a field in a `limit:` line of its comment: of a string's length in
/// UTF-8 bytes, or of a repeated field's number of items. It is the one source of the bound:
/// wiregen writes a Swift constant for it (`<Message>.Limits.<field>`, `<field>Count` for items),
/// which the services check, and the OpenAPI document's `minLength`/`maxLength` (or
/// `minItems`/`maxItems`).
///
///     // limit: 1..128 bytes
///     string idempotency_key = 1;
///     // limit: 0..100 items
///     // limit: 1..64 bytes
///     repeated string apple_transaction_ids = 3;
///
/// On a repeated string field a `bytes` bound holds for each element. The line stays in the
/// field's documentation.
struct FieldLimit {
    enum Unit: String {
        case bytes, items
    }

    /// What a limit line starts with.
    static let prefix = "limit:"

    var minimum: Int
    var maximum: Int
    var unit: Unit

    /// The limits stated in `comment` for `field` (`label` names it in errors). Throws for a
    /// `limit:` line that does not read `MIN..MAX bytes|items`, or a unit the field cannot have.
    static func parse(_ comment: String?, field: FieldDescriptor, label: String) throws(GeneratorError) -> [FieldLimit]
    {
        var limits: [FieldLimit] = []
        for line in Comment(comment).lines where line.hasPrefix(prefix) {
            let words = line.dropFirst(prefix.count).split(separator: " ")
            let bounds = words.first?.split(separator: ".", omittingEmptySubsequences: false) ?? []
            guard words.count == 2, bounds.count == 3, bounds[1].isEmpty, let minimum = Int(bounds[0]),
                let maximum = Int(bounds[2]), 0 <= minimum, minimum <= maximum,
                let unit = Unit(rawValue: String(words[1]))
            else {
                throw GeneratorError(
                    "\(label): \"\(line)\" is not \"limit: MIN..MAX bytes\" or \"limit: MIN..MAX items\"")
            }
            switch unit {
            case .bytes where field.kind != .string && field.kind != .bytes:
                throw GeneratorError("\(label): a bytes limit is for string and bytes fields")
            case .items where !field.repeated:
                throw GeneratorError("\(label): an items limit is for repeated fields")
            default: break
            }
            guard !limits.contains(where: { $0.unit == unit }) else {
                throw GeneratorError("\(label): two \(unit.rawValue) limits")
            }
            limits.append(FieldLimit(minimum: minimum, maximum: maximum, unit: unit))
        }
        return limits
    }

    /// `extension <swiftName> { public enum Limits { … } }` with a constant per limit of
    /// `message`'s fields (declared at `path` in `file`), or nothing when none has one.
    static func swiftExtension(
        _ swiftName: String, _ message: MessageDescriptor, file: FileDescriptor, path: [Int]
    ) throws(GeneratorError) -> [String] {
        var constants: [String] = []
        var names: [String] = []
        for (index, field) in message.fields.enumerated() {
            let label = "\(file.package).\(message.name).\(field.name)"
            for limit in try parse(file.comments[path + [2, index]], field: field, label: label) {
                let name = Naming.swiftProperty(field.name).filter { $0 != "`" } + (limit.unit == .items ? "Count" : "")
                names.append(name)
                constants += [
                    "        /// `\(field.name)`: \(limit.minimum)..\(limit.maximum) \(limit.unit.rawValue)\(limit.unit == .bytes && field.repeated ? " each" : "").",
                    "        public static let \(name) = FieldLimit(\"\(field.name)\", \(limit.minimum)...\(limit.maximum), .\(limit.unit.rawValue))",
                ]
            }
        }
        guard !constants.isEmpty else { return [] }
        return [
            "",
            "extension \(swiftName) {",
            "    /// The bounds `proto/` states for this message's fields (their `limit:` lines).",
            "    public enum Limits {",
        ] + constants + [
            "        /// Every one above, in field order.",
            "        public static let all: [FieldLimit] = [\(names.joined(separator: ", "))]",
            "    }", "}",
        ]
    }

    /// `schema` (a field's OpenAPI schema; an array's for a repeated field) with the limits
    /// stated in `comment` for `field`.
    static func openAPI(_ schema: OpenAPIEmitter.JSON, _ comment: String?, field: FieldDescriptor, label: String)
        throws(GeneratorError) -> OpenAPIEmitter.JSON
    {
        var schema = schema
        for limit in try parse(comment, field: field, label: label) {
            let (low, high) = limit.unit == .items ? ("minItems", "maxItems") : ("minLength", "maxLength")
            var bounds: [(String, OpenAPIEmitter.JSON)] = limit.minimum > 0 ? [(low, .integer(limit.minimum))] : []
            bounds.append((high, .integer(limit.maximum)))
            guard case .object(var members) = schema else { continue }
            if limit.unit == .bytes, field.repeated, let at = members.firstIndex(where: { $0.0 == "items" }),
                case .object(let item) = members[at].1
            {
                members[at].1 = .object(item + bounds)
            } else {
                members += bounds
            }
            schema = .object(members)
        }
        return schema
    }
}
