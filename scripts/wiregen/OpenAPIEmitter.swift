import Observability

/// Writes an OpenAPI 3.1 description of each service's HTTP API (the Connect unary calls the
/// gateway serves): one path per unary method, its request and response as proto3 JSON schemas
/// (with the `.proto` comments as descriptions) or binary protobuf, and Connect's error body.
struct OpenAPIEmitter {
    let schema: Schema

    /// A JSON value whose objects keep their keys in the order written.
    indirect enum JSON {
        case string(String)
        case bool(Bool)
        case integer(Int)
        case array([JSON])
        case object([(String, JSON)])

        func write(_ indent: String = "") -> String {
            let inner = indent + "  "
            switch self {
            case .string(let text): return Self.quote(text)
            case .bool(let flag): return flag ? "true" : "false"
            case .integer(let value): return String(value)
            case .array(let items):
                if items.isEmpty { return "[]" }
                return "[\n" + items.map { inner + $0.write(inner) }.joined(separator: ",\n") + "\n\(indent)]"
            case .object(let members):
                if members.isEmpty { return "{}" }
                return "{\n"
                    + members.map { inner + Self.quote($0.0) + ": " + $0.1.write(inner) }
                    .joined(separator: ",\n") + "\n\(indent)}"
            }
        }

        static func quote(_ text: String) -> String {
            var out = ""
            JSONText.appendString(text, to: &out)
            return out
        }
    }

    /// Where a message or enum is declared, for its comments.
    private struct Declaration {
        let file: FileDescriptor
        let path: [Int]
    }

    /// The documents by service full name (`subscriptions.ledger.v1.Ledger`).
    func emit() throws(GeneratorError) -> [(service: String, json: String)] {
        var messages: [String: (MessageDescriptor, Declaration)] = [:]
        var enums: [String: (EnumDescriptor, Declaration)] = [:]
        for file in schema.files {
            for (index, message) in file.messages.enumerated() {
                messages["\(file.package).\(message.name)"] = (message, Declaration(file: file, path: [4, index]))
            }
            for (index, enumeration) in file.enums.enumerated() {
                enums["\(file.package).\(enumeration.name)"] = (enumeration, Declaration(file: file, path: [5, index]))
            }
        }
        var documents: [(String, String)] = []
        for file in schema.files {
            for (serviceIndex, service) in file.services.enumerated() {
                let full = "\(file.package).\(service.name)"
                var paths: [(String, JSON)] = []
                var inputs: [String] = []
                var outputs: [String] = []
                for (methodIndex, method) in service.methods.enumerated() where !method.serverStreaming {
                    let input = String(method.inputType.dropFirst())
                    let output = String(method.outputType.dropFirst())
                    inputs.append(input)
                    outputs.append(output)
                    let doc = Comment(file.comments[[6, serviceIndex, 2, methodIndex]]).lines.joined(separator: "\n")
                    paths.append(("/\(full)/\(method.name)", operation(service.name, method.name, doc, input, output)))
                }
                // Every message and enum the requests, and the answers, reach.
                func reach(_ roots: [String]) -> Set<String> {
                    var wanted = roots
                    var reached: Set<String> = []
                    while let name = wanted.popLast() {
                        guard reached.insert(name).inserted, let (message, _) = messages[name] else { continue }
                        wanted += message.fields.filter { !$0.typeName.isEmpty }.map { String($0.typeName.dropFirst()) }
                    }
                    return reached
                }
                let (asked, answered) = (reach(inputs), reach(outputs))
                var schemas: [(String, JSON)] = []
                for name in asked.union(answered).sorted() {
                    if let (message, declaration) = messages[name] {
                        let presence: AnswerPresence =
                            !answered.contains(name) ? .none : asked.contains(name) ? .described : .required
                        schemas.append((name, try messageSchema(name, message, declaration, presence)))
                    } else if let (enumeration, declaration) = enums[name] {
                        schemas.append((name, enumSchema(enumeration, declaration)))
                    }
                }
                schemas.append(("connect.error", Self.errorSchema))
                let serviceDoc = Comment(file.comments[[6, serviceIndex]]).lines.joined(separator: "\n")
                let document = JSON.object([
                    ("openapi", .string("3.1.0")),
                    (
                        "info",
                        .object([
                            ("title", .string(full)),
                            ("version", .string(file.package.split(separator: ".").last.map(String.init) ?? "v1")),
                            (
                                "description",
                                .string(
                                    (serviceDoc.isEmpty ? "" : serviceDoc + "\n\n")
                                        + "The Connect protocol's unary calls (connectrpc.com/docs/protocol): POST a "
                                        + "method's request as proto3 JSON or binary protobuf; the answer comes in the "
                                        + "same encoding, an error as Connect's JSON error body. A JSON answer "
                                        + "carries every bool and list field (false or [] when unset); other "
                                        + "defaults are left out, as proto3 JSON has them.")
                            ),
                        ])
                    ),
                    ("paths", .object(paths)),
                    (
                        "components",
                        .object([
                            ("schemas", .object(schemas)),
                            (
                                "securitySchemes",
                                .object([
                                    (
                                        "apiKey",
                                        .object([
                                            ("type", .string("http")), ("scheme", .string("bearer")),
                                            ("description", .string("A key listed in the service's API_KEYS_FILE.")),
                                        ])
                                    )
                                ])
                            ),
                        ])
                    ),
                    // A key when the service has API keys; none from loopback when it has not.
                    ("security", .array([.object([("apiKey", .array([]))]), .object([])])),
                ])
                documents.append((full, document.write() + "\n"))
            }
        }
        return documents
    }

    private func operation(_ service: String, _ method: String, _ doc: String, _ input: String, _ output: String)
        -> JSON
    {
        func ref(_ name: String) -> JSON { .object([("$ref", .string("#/components/schemas/\(name)"))]) }
        let binary = JSON.object([("schema", .object([("type", .string("string")), ("format", .string("binary"))]))])
        let header = { (name: String, description: String, schema: JSON) -> JSON in
            .object([
                ("name", .string(name)), ("in", .string("header")), ("required", .bool(false)),
                ("description", .string(description)), ("schema", schema),
            ])
        }
        var members: [(String, JSON)] = [
            ("operationId", .string("\(service).\(method)")), ("tags", .array([.string(service)])),
        ]
        if !doc.isEmpty { members.append(("description", .string(doc))) }
        members += [
            (
                "parameters",
                .array([
                    header(
                        "Connect-Protocol-Version", "The Connect protocol version: 1.",
                        .object([("type", .string("string")), ("enum", .array([.string("1")]))])),
                    header(
                        "Connect-Timeout-Ms", "The call's deadline in milliseconds.",
                        .object([("type", .string("string")), ("pattern", .string("^[0-9]{1,10}$"))])),
                ])
            ),
            (
                "requestBody",
                .object([
                    ("required", .bool(true)),
                    (
                        "content",
                        .object([
                            ("application/json", .object([("schema", ref(input))])), ("application/proto", binary),
                        ])
                    ),
                ])
            ),
            (
                "responses",
                .object([
                    (
                        "200",
                        .object([
                            ("description", .string("The answer, in the request's encoding.")),
                            (
                                "content",
                                .object([
                                    ("application/json", .object([("schema", ref(output))])),
                                    ("application/proto", binary),
                                ])
                            ),
                        ])
                    ),
                    (
                        "default",
                        .object([
                            (
                                "description",
                                .string("An error: Connect's error body, with the HTTP status of its code.")
                            ),
                            ("content", .object([("application/json", .object([("schema", ref("connect.error"))]))])),
                        ])
                    ),
                ])
            ),
        ]
        return .object([("post", .object(members))])
    }

    /// How a message's schema says which of its fields an answer always carries (the gateway
    /// writes bools and lists at their default, `ProtoJSON.Defaults.boolsAndLists`).
    enum AnswerPresence {
        /// Not in an answer.
        case none
        /// Only in answers: the fields are `required`.
        case required
        /// In requests too, where they may be left out: the fields' descriptions say so.
        case described
    }

    private func messageSchema(
        _ name: String, _ message: MessageDescriptor, _ declaration: Declaration, _ presence: AnswerPresence
    ) throws(GeneratorError) -> JSON {
        var properties: [(String, JSON)] = []
        var required: [JSON] = []
        for (index, field) in message.fields.enumerated() {
            let json = field.jsonName.isEmpty ? Naming.lowerCamel(field.name) : field.jsonName
            var type = try fieldSchema(field, in: name)
            if field.repeated { type = .object([("type", .string("array")), ("items", type)]) }
            let comment = declaration.file.comments[declaration.path + [2, index]]
            type = try FieldLimit.openAPI(type, comment, field: field, label: "\(name).\(field.name)")
            // The limit lines are the schema's bounds: not repeated in the description.
            var doc = Comment(comment).lines.filter { !$0.hasPrefix(FieldLimit.prefix) }.joined(separator: "\n")
            let alwaysAnswered = (field.repeated || field.kind == .bool) && !field.proto3Optional
            if alwaysAnswered && presence == .required {
                required.append(.string(json))
            } else if alwaysAnswered && presence == .described {
                doc +=
                    (doc.isEmpty ? "" : "\n\n")
                    + "Always present in an answer (\(field.repeated ? "[]" : "false") when unset)."
            }
            if !doc.isEmpty {
                // A $ref takes no siblings in older tools: wrap it.
                if case .object(let members) = type, members.first?.0 == "$ref" {
                    type = .object([("allOf", .array([type])), ("description", .string(doc))])
                } else if case .object(let members) = type {
                    type = .object(members + [("description", .string(doc))])
                }
            }
            properties.append((json, type))
        }
        var members: [(String, JSON)] = [("type", .string("object"))]
        let doc = Comment(declaration.file.comments[declaration.path]).lines.joined(separator: "\n")
        if !doc.isEmpty { members.append(("description", .string(doc))) }
        members.append(("properties", .object(properties)))
        if !required.isEmpty { members.append(("required", .array(required))) }
        return .object(members)
    }

    private func fieldSchema(_ field: FieldDescriptor, in message: String) throws(GeneratorError) -> JSON {
        switch field.kind {
        case .int32: return .object([("type", .string("integer")), ("format", .string("int32"))])
        case .uint32: return .object([("type", .string("integer")), ("format", .string("uint32"))])
        // proto3 JSON writes 64-bit integers as strings (and reads numbers too).
        case .int64:
            return .object([
                ("type", .string("string")), ("format", .string("int64")), ("pattern", .string("^-?[0-9]+$")),
            ])
        case .uint64:
            return .object([
                ("type", .string("string")), ("format", .string("uint64")), ("pattern", .string("^[0-9]+$")),
            ])
        case .bool: return .object([("type", .string("boolean"))])
        case .string: return .object([("type", .string("string"))])
        case .bytes: return .object([("type", .string("string")), ("format", .string("byte"))])
        case .enumeration, .message:
            return .object([("$ref", .string("#/components/schemas/\(field.typeName.dropFirst())"))])
        default: throw GeneratorError("\(message).\(field.name): \(field.kind) is not supported")
        }
    }

    private func enumSchema(_ enumeration: EnumDescriptor, _ declaration: Declaration) -> JSON {
        var members: [(String, JSON)] = [("type", .string("string"))]
        var doc = Comment(declaration.file.comments[declaration.path]).lines.joined(separator: "\n")
        let values = enumeration.values.enumerated().map { index, value -> String in
            let text = Comment(declaration.file.comments[declaration.path + [2, index]]).lines.joined(separator: " ")
            return "- `\(value.name)` (\(value.number))" + (text.isEmpty ? "" : ": \(text)")
        }
        doc += (doc.isEmpty ? "" : "\n\n") + values.joined(separator: "\n")
        members.append(("description", .string(doc)))
        members.append(("enum", .array(enumeration.values.map { .string($0.name) })))
        return .object(members)
    }

    /// Connect's JSON error body.
    static let errorSchema = JSON.object([
        ("type", .string("object")),
        ("description", .string("Connect's error body; `code` is Connect's name of the status code.")),
        (
            "properties",
            .object([
                (
                    "code",
                    .object([
                        ("type", .string("string")),
                        (
                            "enum",
                            .array(
                                [
                                    "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found",
                                    "already_exists", "permission_denied", "resource_exhausted", "failed_precondition",
                                    "aborted", "out_of_range", "unimplemented", "internal", "unavailable", "data_loss",
                                    "unauthenticated",
                                ].map { .string($0) })
                        ),
                    ])
                ),
                ("message", .object([("type", .string("string"))])),
            ])
        ),
        ("required", .array([.string("code")])),
    ])
}
