/// Every message and enum of the descriptor set, by full name, with what the Swift side calls it.
struct Schema {
    struct TypeInfo {
        var package: String
        var protoName: String
        var swiftName: String
        var isEnum: Bool
        /// Written by hand (in Model or in Wire): the generator only refers to it.
        var handWritten: Bool
    }

    var files: [FileDescriptor]
    private(set) var types: [String: TypeInfo] = [:]

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
    }

    private mutating func add(_ file: FileDescriptor, _ name: String, isEnum: Bool, comment: String?)
        throws(GeneratorError)
    {
        let directive = Comment(comment).handWritten
        let full = ".\(file.package).\(name)"
        guard types[full] == nil else { throw GeneratorError("\(full) is declared twice") }
        types[full] = TypeInfo(
            package: file.package, protoName: "\(file.package).\(name)",
            swiftName: directive.flatMap { $0.isEmpty ? nil : $0 } ?? name, isEnum: isEnum,
            handWritten: directive != nil)
    }

    func type(_ fullName: String, for field: String) throws(GeneratorError) -> TypeInfo {
        guard let info = types[fullName] else { throw GeneratorError("\(field): unknown type \(fullName)") }
        return info
    }
}

/// A `.proto` comment: the text that becomes `///` documentation, and the generator's directive.
///
/// A line `@swift-hand` says the Swift type is written by hand (a `Model` type with its
/// conversion in `Wire`, or the envelope's hot path); `@swift-hand Name` also names it when the
/// Swift name differs from the proto name.
struct Comment {
    var lines: [String] = []
    /// The Swift name of a hand-written type, when the comment has the directive.
    var handWritten: String?

    init(_ text: String?) {
        guard let text else { return }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var line = Substring(line)
            if line.hasPrefix(" ") { line = line.dropFirst() }
            while line.last == " " { line = line.dropLast() }
            return String(line)
        }
        lines.removeAll { line in
            guard line.hasPrefix("@swift-hand") else { return false }
            let words = line.split(separator: " ")
            handWritten = words.count > 1 ? String(words[1]) : ""
            return true
        }
        while lines.first == "" { lines.removeFirst() }
        while lines.last == "" { lines.removeLast() }
        self.lines = lines
    }

    /// `///` lines at `indent`, or nothing.
    func doc(_ indent: String) -> [String] { lines.map { $0.isEmpty ? "\(indent)///" : "\(indent)/// \($0)" } }
}
