internal import CProto
internal import CProtobufC

/// The protoc-c descriptors compiled into this binary, found by walking from the service
/// descriptors (every request and response, and every message or enum their fields use) and
/// from `subscriptions.rpc.v1.Envelope`, the one message no method carries.
///
/// Descriptors are static constants of the generated code: nothing here allocates or frees
/// them. Their pointers are still lent out only inside `withDescriptors`.
enum DescriptorRegistry {
    /// The descriptors, by full protobuf name.
    struct Tables {
        var services: [ProtobufCServiceDescriptor] = []
        var messages: [String: UnsafePointer<ProtobufCMessageDescriptor>] = [:]
        var enums: [String: UnsafePointer<ProtobufCEnumDescriptor>] = [:]
    }

    /// Calls `body` with every service, message and enum descriptor.
    static func withDescriptors<T, E: Error>(_ body: (Tables) throws(E) -> T) throws(E) -> T {
        var tables = Tables()
        // Copies of the service descriptors: their method tables point at the static message descriptors.
        tables.services = [
            subscriptions__verifier__v1__verifier__descriptor,
            subscriptions__ledger__v1__ledger__descriptor,
            subscriptions__entitlement__v1__entitlement__descriptor,
        ]
        var pending: [UnsafePointer<ProtobufCMessageDescriptor>] = []
        for service in tables.services {
            for method in UnsafeBufferPointer(start: service.methods, count: Int(service.n_methods)) {
                pending.append(method.input)
                pending.append(method.output)
            }
        }
        // The generated init stores the descriptor's own address in the message header.
        var envelope = Subscriptions__Rpc__V1__Envelope()
        subscriptions__rpc__v1__envelope__init(&envelope)
        pending.append(envelope.base.descriptor)

        while let descriptor = pending.popLast() {
            let name = String(cString: descriptor.pointee.name)
            guard tables.messages[name] == nil else { continue }
            tables.messages[name] = descriptor
            for field in fields(of: descriptor) {
                if field.type == PROTOBUF_C_TYPE_MESSAGE {
                    pending.append(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
                } else if field.type == PROTOBUF_C_TYPE_ENUM {
                    let enumDescriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
                    tables.enums[String(cString: enumDescriptor.pointee.name)] = enumDescriptor
                }
            }
        }
        return try body(tables)
    }

    /// Calls `body` with the descriptor of the message `fullName`; throws `notFound` when no
    /// method uses such a message.
    static func withMessageDescriptor<T>(
        named fullName: String, _ body: (UnsafePointer<ProtobufCMessageDescriptor>) throws(SubctlError) -> T
    ) throws(SubctlError) -> T {
        try withDescriptors { tables throws(SubctlError) in
            guard let descriptor = tables.messages[fullName] else {
                throw SubctlError(.notFound, "no message \(fullName)")
            }
            return try body(descriptor)
        }
    }

    /// The fields of a message, in field-number order.
    static func fields(
        of descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> UnsafeBufferPointer<ProtobufCFieldDescriptor> {
        UnsafeBufferPointer(start: descriptor.pointee.fields, count: Int(descriptor.pointee.n_fields))
    }

    /// The proto3 JSON name of a field: protoc's lowerCamelCase of the proto name.
    static func jsonName(_ protoName: String) -> String {
        var result = ""
        var upperNext = false
        for character in protoName {
            if character == "_" {
                upperNext = true
            } else {
                result += upperNext ? character.uppercased() : String(character)
                upperNext = false
            }
        }
        return result
    }

    /// The type as the .proto file spells it: a scalar keyword or a full message or enum name.
    static func typeName(of field: ProtobufCFieldDescriptor) -> String {
        switch field.type {
        case PROTOBUF_C_TYPE_INT32: "int32"
        case PROTOBUF_C_TYPE_SINT32: "sint32"
        case PROTOBUF_C_TYPE_SFIXED32: "sfixed32"
        case PROTOBUF_C_TYPE_INT64: "int64"
        case PROTOBUF_C_TYPE_SINT64: "sint64"
        case PROTOBUF_C_TYPE_SFIXED64: "sfixed64"
        case PROTOBUF_C_TYPE_UINT32: "uint32"
        case PROTOBUF_C_TYPE_FIXED32: "fixed32"
        case PROTOBUF_C_TYPE_UINT64: "uint64"
        case PROTOBUF_C_TYPE_FIXED64: "fixed64"
        case PROTOBUF_C_TYPE_FLOAT: "float"
        case PROTOBUF_C_TYPE_DOUBLE: "double"
        case PROTOBUF_C_TYPE_BOOL: "bool"
        case PROTOBUF_C_TYPE_STRING: "string"
        case PROTOBUF_C_TYPE_BYTES: "bytes"
        case PROTOBUF_C_TYPE_ENUM:
            String(cString: field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self).pointee.name)
        case PROTOBUF_C_TYPE_MESSAGE:
            String(cString: field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self).pointee.name)
        default: "type\(field.type.rawValue)"
        }
    }
}
