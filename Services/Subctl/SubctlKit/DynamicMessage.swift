internal import CProto
internal import CProtobufC
import Foundation
import Wire

/// Converts between proto3 JSON and protobuf bytes for any message of `proto/`, driven by
/// protoc-c's runtime descriptors instead of per-message code.
///
/// The JSON mapping is proto3's: fields by proto name or lowerCamelCase JSON name on input,
/// JSON names on output; 64-bit integers as strings (numbers accepted too); enums by name
/// (numbers accepted, unknown numbers printed as numbers); bytes as base64; default values
/// left out of the output, in field-number order.
public enum DynamicMessage {
    /// The protobuf bytes of the message `messageFullName` (e.g.
    /// `subscriptions.ledger.v1.GetSubscriptionRequest`) that the JSON object `json` describes.
    ///
    /// Throws `invalidArgument` naming the message and field for invalid JSON, an unknown
    /// field, a value of the wrong type, a number out of range or an unknown enum name;
    /// `notFound` when there is no such message.
    public static func encode(json: String, as messageFullName: String) throws(SubctlError) -> [UInt8] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(json.utf8))
        } catch {
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw SubctlError(.invalidArgument, "the request is not valid JSON: \(reason)")
        }
        guard let object = parsed as? [String: Any] else {
            throw SubctlError(.invalidArgument, "the request must be a JSON object (\(messageFullName))")
        }
        return try DescriptorRegistry.withMessageDescriptor(named: messageFullName) { descriptor throws(SubctlError) in
            let message = newMessage(descriptor)
            // Everything `fill` sets is malloc'd and hangs off `message`: freed here, also after a throw.
            defer { protobuf_c_message_free_unpacked(message, nil) }
            try fill(message, from: object)
            let size = protobuf_c_message_get_packed_size(message)
            guard size > 0 else { return [] }
            return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                count = protobuf_c_message_pack(message, buffer.baseAddress!)
            }
        }
    }

    /// The proto3 JSON of `bytes`, decoded as the message `messageFullName`: indented by two
    /// spaces when `pretty`, else on one line.
    ///
    /// Throws `dataLoss` saying why when the bytes are not such a message, `notFound` when
    /// there is no such message.
    public static func decodeToJSON(_ bytes: [UInt8], as messageFullName: String, pretty: Bool) throws(SubctlError)
        -> String
    {
        try DescriptorRegistry.withMessageDescriptor(named: messageFullName) { descriptor throws(SubctlError) in
            let unpacked = bytes.withUnsafeBufferPointer { buffer in
                protobuf_c_message_unpack(descriptor, nil, buffer.count, buffer.baseAddress)
            }
            guard let message = unpacked else {
                let reason = bytes.withUnsafeBytes { ProtoWireScanner.firstProblem(in: $0) }
                throw SubctlError(
                    .dataLoss,
                    "the answer is not a valid \(messageFullName): \(reason ?? "a field has a value of the wrong type")"
                )
            }
            // The unpacked message owns copies of every field; freed once the JSON is written.
            defer { protobuf_c_message_free_unpacked(message, nil) }
            return JSONLayout(pretty: pretty).message(message, depth: 0)
        }
    }

    /// A zeroed message of `descriptor` after its generated init, allocated with the system
    /// allocator as `protobuf_c_message_free_unpacked` expects. The caller stores it where its
    /// owner frees it before doing anything that can throw.
    static func newMessage(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> UnsafeMutablePointer<
        ProtobufCMessage
    > {
        guard let memory = calloc(1, descriptor.pointee.sizeof_message) else { fatalError("out of memory") }
        let message = memory.bindMemory(to: ProtobufCMessage.self, capacity: 1)
        descriptor.pointee.message_init(message)
        return message
    }

    /// The size of one element of a repeated field's array (protobuf-c's layout).
    static func elementSize(_ type: ProtobufCType) -> Int {
        switch type {
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_UINT64,
            PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE:
            8
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_MESSAGE: MemoryLayout<UnsafeRawPointer>.size
        case PROTOBUF_C_TYPE_BYTES: MemoryLayout<ProtobufCBinaryData>.size
        // int32 and friends, float, protobuf_c_boolean and enums are all 4 bytes.
        default: 4
        }
    }
}
