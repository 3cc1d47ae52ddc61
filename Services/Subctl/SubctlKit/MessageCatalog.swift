internal import CProto
internal import CProtobufC
import Wire

/// Every service method, message and enum of `proto/`, read from protoc-c's descriptors.
public struct MessageCatalog: Sendable {
    /// The catalog of the descriptors compiled into this binary.
    public static let standard = MessageCatalog()

    /// The methods whose response is a server stream, from the generated method descriptors
    /// (protoc-c's descriptors do not record streaming).
    public static let serverStreamingMethods: Set<String> = Set(
        (VerifierRPC.methods + LedgerRPC.methods + EntitlementRPC.methods).filter(\.isServerStreaming).map(\.name))

    /// Verifier, Ledger, Entitlement; each service's methods in .proto order.
    public let methods: [CatalogMethod]
    /// Sorted by full name.
    public let messages: [CatalogMessage]
    /// Sorted by full name.
    public let enums: [CatalogEnum]

    private init() {
        (methods, messages, enums) = DescriptorRegistry.withDescriptors { tables in
            let methods = tables.services.flatMap { service in
                let serviceFullName = String(cString: service.name)
                return UnsafeBufferPointer(start: service.methods, count: Int(service.n_methods)).map { method in
                    let name = String(cString: method.name)
                    return CatalogMethod(
                        serviceFullName: serviceFullName, serviceName: String(cString: service.short_name),
                        name: name, inputType: String(cString: method.input.pointee.name),
                        outputType: String(cString: method.output.pointee.name),
                        isServerStreaming: Self.serverStreamingMethods.contains("\(serviceFullName)/\(name)"))
                }
            }
            let messages = tables.messages.map { fullName, descriptor in
                CatalogMessage(
                    fullName: fullName,
                    fields: DescriptorRegistry.fields(of: descriptor).map { field in
                        let name = String(cString: field.name)
                        let kind: CatalogMessage.Field.Kind =
                            switch field.type {
                            case PROTOBUF_C_TYPE_MESSAGE: .message
                            case PROTOBUF_C_TYPE_ENUM: .enumeration
                            default: .scalar
                            }
                        return CatalogMessage.Field(
                            name: name, jsonName: DescriptorRegistry.jsonName(name), number: Int(field.id),
                            typeName: DescriptorRegistry.typeName(of: field), kind: kind,
                            isRepeated: field.label == PROTOBUF_C_LABEL_REPEATED)
                    })
            }
            let enums = tables.enums.map { fullName, descriptor in
                CatalogEnum(
                    fullName: fullName,
                    values: UnsafeBufferPointer(
                        start: descriptor.pointee.values, count: Int(descriptor.pointee.n_values)
                    )
                    .map { CatalogEnum.Value(name: String(cString: $0.name), number: Int($0.value)) })
            }
            return (methods, messages.sorted { $0.fullName < $1.fullName }, enums.sorted { $0.fullName < $1.fullName })
        }
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
