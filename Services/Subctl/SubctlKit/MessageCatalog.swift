import Wire

/// Every service method, message and enum of `proto/`, from the schema table wiregen generates
/// (`ProtoSchema`).
public struct MessageCatalog: Sendable {
    /// The catalog of the schema compiled into this binary.
    public static let standard = MessageCatalog()

    /// The methods whose response is a server stream.
    public static let serverStreamingMethods: Set<String> = Set(
        standard.methods.filter(\.isServerStreaming).map(\.fullName))

    /// Verifier, Ledger, Entitlement; each service's methods in .proto order.
    public let methods: [CatalogMethod]
    /// Sorted by full name.
    public let messages: [CatalogMessage]
    /// Sorted by full name.
    public let enums: [CatalogEnum]

    private init() {
        // The order a purchase passes through them.
        let order = ["Verifier", "Ledger", "Entitlement"]
        let services = ProtoSchema.services.sorted {
            (order.firstIndex(of: $0.name) ?? order.count) < (order.firstIndex(of: $1.name) ?? order.count)
        }
        methods = services.flatMap { service in
            service.methods.map { method in
                CatalogMethod(
                    serviceFullName: service.fullName, serviceName: service.name, name: method.name,
                    inputType: method.input, outputType: method.output, isServerStreaming: method.isServerStreaming)
            }
        }
        messages = ProtoSchema.messages.values.map { message in
            CatalogMessage(
                fullName: message.fullName,
                fields: message.fields.map { field in
                    let (typeName, kind): (String, CatalogMessage.Field.Kind) =
                        switch field.type {
                        case .message(let name): (name, .message)
                        case .enumeration(let name): (name, .enumeration)
                        default: ("\(field.type)", .scalar)
                        }
                    return CatalogMessage.Field(
                        name: field.name, jsonName: field.jsonName, number: field.number, typeName: typeName,
                        kind: kind,
                        isRepeated: field.isRepeated)
                })
        }
        .sorted { $0.fullName < $1.fullName }
        enums = ProtoSchema.enums.values.map { enumeration in
            CatalogEnum(
                fullName: enumeration.fullName,
                values: enumeration.values.map { CatalogEnum.Value(name: $0.name, number: Int($0.number)) })
        }
        .sorted { $0.fullName < $1.fullName }
    }

    /// The methods `name` can mean: `package.Service/Method`, `Service/Method` or `Method`
    /// (case-sensitive).
    public func methods(matching name: String) -> [CatalogMethod] {
        guard let slash = name.firstIndex(of: "/") else { return methods.filter { $0.name == name } }
        let service = name[..<slash]
        let method = name[name.index(after: slash)...]
        return methods.filter { ($0.serviceFullName == service || $0.serviceName == service) && $0.name == method }
    }

    /// The one method `name` means (see `methods(matching:)`).
    /// Throws `notFound` when there is none and `invalidArgument` when several services have it.
    public func method(named name: String) throws(SubctlError) -> CatalogMethod {
        let matches = methods(matching: name)
        guard matches.count <= 1 else {
            throw SubctlError(
                .invalidArgument,
                "method \(name) is ambiguous: \(matches.map(\.fullName).joined(separator: ", ")); name the service too, "
                    + "as in \(matches[0].serviceName)/\(matches[0].name)")
        }
        guard let method = matches.first else {
            throw SubctlError(.notFound, "no method \(name) (subctl methods lists them)")
        }
        return method
    }

    /// The messages `name` can mean: a full name, or a name without its package.
    public func messages(matching name: String) -> [CatalogMessage] {
        messages.filter { $0.fullName == name || $0.fullName.hasSuffix(".\(name)") }
    }

    /// The enums `name` can mean: a full name, or a name without its package.
    public func enums(matching name: String) -> [CatalogEnum] {
        enums.filter { $0.fullName == name || $0.fullName.hasSuffix(".\(name)") }
    }
}
