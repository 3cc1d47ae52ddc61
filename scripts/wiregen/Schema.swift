/// Every message and enum of the descriptor set, by full name, with what the Swift side calls it.
struct Schema {
    struct TypeInfo {
        var package: String
        var protoName: String
        var swiftName: String
        var isEnum: Bool
        /// Written by hand (in Model or in Wire): the generator only refers to it.
        var handWritten: Bool
        /// Generated into `Model` (an enum the services' domain code uses), not `Wire`.
        var inModel: Bool
        /// A closed enum: no `unknown` case, an unknown number is refused.
        var closed: Bool
    }

    var files: [FileDescriptor]
    private(set) var types: [String: TypeInfo] = [:]
    /// The messages whose `redacted()` changes something, by full name (`.package.Name`): those
    /// with an `@redact` field, and those with a message field of such a message.
    private(set) var redacting: Set<String> = []

    init(files: [FileDescriptor]) throws(GeneratorError) {
        self.files = files
        for file in files {
            for (index, message) in file.messages.enumerated() {
                try add(file, message.name, isEnum: false, comment: file.comments[[4, index]])
            }
            for (index, enumeration) in file.enums.enumerated() {
                try add(file, enumeration.name, isEnum: true, comment: file.comments[[5, index]])
            }
        }
        var children: [String: [String]] = [:]
        for file in files {
            for (index, message) in file.messages.enumerated() {
                let full = ".\(file.package).\(message.name)"
                for (number, field) in message.fields.enumerated() {
                    if Comment(file.comments[[4, index, 2, number]]).redact != nil { redacting.insert(full) }
                    if field.kind == .message { children[full, default: []].append(field.typeName) }
                }
            }
        }
        // A message that holds one that redacts redacts too, however deep.
        var grew = true
        while grew {
            grew = false
            for (parent, types) in children
            where !redacting.contains(parent) && types.contains(where: redacting.contains) {
                redacting.insert(parent)
                grew = true
            }
        }
    }

    private mutating func add(_ file: FileDescriptor, _ name: String, isEnum: Bool, comment: String?)
        throws(GeneratorError)
    {
        let comment = Comment(comment)
        let full = ".\(file.package).\(name)"
        guard types[full] == nil else { throw GeneratorError("\(full) is declared twice") }
        if comment.handWritten != nil && comment.model != nil {
            throw GeneratorError("\(full): @swift-hand and @swift-model exclude each other")
        }
        if !isEnum && comment.closed { throw GeneratorError("\(full): @swift-closed is for enums") }
        let named = comment.handWritten ?? comment.model
        types[full] = TypeInfo(
            package: file.package, protoName: "\(file.package).\(name)",
            swiftName: named.flatMap { $0.isEmpty ? nil : $0 } ?? name, isEnum: isEnum,
            handWritten: comment.handWritten != nil, inModel: comment.model != nil, closed: comment.closed)
    }

    func type(_ fullName: String, for field: String) throws(GeneratorError) -> TypeInfo {
        guard let info = types[fullName] else { throw GeneratorError("\(field): unknown type \(fullName)") }
        return info
    }
}

/// A `.proto` comment: the text that becomes `///` documentation, and the generator's directives.
///
/// - `@swift-hand [Name]`: the Swift type is written by hand (a `Model` type with its
///   conversion in `Wire`, or the envelope's hot path), named `Name` when that differs from the
///   proto name.
/// - `@swift-model [Name]`: a type of `Model` (the domain code's types). An enum is generated
///   into `Model`; a message is written there by hand (its fields as the generator names them,
///   its memberwise init in field order) and its protobuf conversion generated into `Wire`.
/// - `@swift-required` (on a message or enum field): the field must be present, a non-optional
///   Swift property; decoding refuses a message without it.
/// - `@swift-closed`: the enum is closed: no `unknown` case, and decoding refuses a number this
///   version does not know.
/// - `@read` (on an rpc): the method changes nothing, so a caller with the read-only role
///   (`RPC_READ_ONLY`) may call it; every other method is refused such a caller.
/// - `@redact store-id` (on a string field): a store identifier, which a read-only caller sees
///   cut to its last 4 characters after `…`; `@redact payload` (on any field): raw store data,
///   which a read-only caller sees cleared.
struct Comment {
    var lines: [String] = []
    /// The Swift name of a hand-written type, when the comment has the directive.
    var handWritten: String?
    /// The Swift name of an enum generated into `Model`, when the comment has the directive.
    var model: String?
    var closed = false
    var required = false
    /// `@read`: the method changes nothing.
    var read = false
    /// What `@redact` names (`store-id`, `payload`), when the comment has the directive.
    var redact: String?

    init(_ text: String?) {
        guard let text else { return }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var line = Substring(line)
            if line.hasPrefix(" ") { line = line.dropFirst() }
            while line.last == " " { line = line.dropLast() }
            return String(line)
        }
        var hand: String?
        var model: String?
        var closed = false
        var required = false
        var read = false
        var redact: String?
        lines.removeAll { line in
            if line == "@read" {
                read = true
                return true
            }
            if line.hasPrefix("@redact ") {
                redact = String(line.dropFirst("@redact ".count))
                return true
            }
            guard line.hasPrefix("@swift-") else { return false }
            let words = line.split(separator: " ")
            let name = words.count > 1 ? String(words[1]) : ""
            switch words[0] {
            case "@swift-hand": hand = name
            case "@swift-model": model = name
            case "@swift-closed": closed = true
            case "@swift-required": required = true
            default: return false  // not a directive: documentation
            }
            return true
        }
        handWritten = hand
        self.model = model
        self.closed = closed
        self.required = required
        self.read = read
        self.redact = redact
        while lines.first == "" { lines.removeFirst() }
        while lines.last == "" { lines.removeLast() }
        self.lines = lines
    }

    /// `///` lines at `indent`, or nothing.
    func doc(_ indent: String) -> [String] { lines.map { $0.isEmpty ? "\(indent)///" : "\(indent)/// \($0)" } }
}
