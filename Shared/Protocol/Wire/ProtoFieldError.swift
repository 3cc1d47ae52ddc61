/// A field of an unpacked protobuf-c struct whose value the Swift type cannot hold: a required
/// sub-message that is missing, or a number of a closed enum this version does not know.
/// Converted to `RPCError(.invalidArgument)` naming the message, so it never leaves the module.
struct ProtoFieldError: Error, CustomStringConvertible {
    /// The proto field names from the outermost message, e.g. `events[2].key.store`.
    var path: String
    /// What is wrong, e.g. `is missing`.
    var problem: String

    init(_ field: String, _ problem: String) {
        path = field
        self.problem = problem
    }

    /// The same error seen from the message that holds `field` (at `index`, when repeated).
    func nested(in field: String, index: Int? = nil) -> ProtoFieldError {
        ProtoFieldError("\(field)\(index.map { "[\($0)]" } ?? "").\(path)", problem)
    }

    var description: String { "\(path) \(problem)" }
}
