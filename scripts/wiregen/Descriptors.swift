/// The parts of `google/protobuf/descriptor.proto` the generator reads, decoded from a
/// `FileDescriptorSet` that `protoc --descriptor_set_out --include_source_info` wrote.
struct FileDescriptor {
    var name = ""
    var package = ""
    var messages: [MessageDescriptor] = []
    var enums: [EnumDescriptor] = []
    var services: [ServiceDescriptor] = []
    /// Comments by source path (descriptor.proto's `SourceCodeInfo.Location.path`).
    var comments: [[Int]: String] = [:]

    static func decodeSet(_ bytes: [UInt8]) throws(GeneratorError) -> [FileDescriptor] {
        var reader = ProtoReader(bytes[...])
        var files: [FileDescriptor] = []
        while case (let number, let value)? = try reader.next() {
            guard number == 1 else { continue }
            files.append(try FileDescriptor(value.message))
        }
        return files
    }

    init(_ bytes: ArraySlice<UInt8>) throws(GeneratorError) {
        var reader = ProtoReader(bytes)
        while case (let number, let value)? = try reader.next() {
            switch number {
            case 1: name = value.string
            case 2: package = value.string
            case 4: messages.append(try MessageDescriptor(value.message))
            case 5: enums.append(try EnumDescriptor(value.message))
            case 6: services.append(try ServiceDescriptor(value.message))
            case 9: comments = try Self.comments(value.message)
            default: break
            }
        }
    }

    private static func comments(_ bytes: ArraySlice<UInt8>) throws(GeneratorError) -> [[Int]: String] {
        var result: [[Int]: String] = [:]
        var reader = ProtoReader(bytes)
        while case (let number, let value)? = try reader.next() {
            guard number == 1 else { continue }
            var location = ProtoReader(value.message)
            var path: [Int] = []
            var leading = ""
            var trailing = ""
            while case (let field, let part)? = try location.next() {
                switch field {
                case 1: path += part.integers
                case 3: leading = part.string
                case 4: trailing = part.string
                default: break
                }
            }
            let text = [leading, trailing].filter { !$0.isEmpty }.joined(separator: "\n")
            if !text.isEmpty { result[path] = text }
        }
        return result
    }
}

struct MessageDescriptor {
    var name = ""
    var fields: [FieldDescriptor] = []
    var nestedCount = 0
    var nestedEnumCount = 0

    init(_ bytes: ArraySlice<UInt8>) throws(GeneratorError) {
        var reader = ProtoReader(bytes)
        while case (let number, let value)? = try reader.next() {
            switch number {
            case 1: name = value.string
            case 2: fields.append(try FieldDescriptor(value.message))
            case 3: nestedCount += 1
            case 4: nestedEnumCount += 1
            default: break
            }
        }
    }
}

struct FieldDescriptor {
    enum Kind: Int {
        case double = 1
        case float, int64, uint64, int32, fixed64, fixed32, bool, string, group, message, bytes, uint32,
            enumeration, sfixed32, sfixed64, sint32, sint64
    }

    var name = ""
    var number = 0
    var repeated = false
    var kind = Kind.int32
    /// The referenced message or enum, fully qualified with a leading dot.
    var typeName = ""
    var oneofIndex: Int?
    var jsonName = ""
    /// Declared `optional` in a proto3 file.
    var proto3Optional = false

    init(_ bytes: ArraySlice<UInt8>) throws(GeneratorError) {
        var reader = ProtoReader(bytes)
        while case (let number, let value)? = try reader.next() {
            switch number {
            case 1: name = value.string
            case 3: self.number = value.integer
            case 4: repeated = value.integer == 3
            case 5:
                guard let kind = Kind(rawValue: value.integer) else {
                    throw GeneratorError("field \(name): unknown type \(value.integer)")
                }
                self.kind = kind
            case 6: typeName = value.string
            case 9: oneofIndex = value.integer
            case 10: jsonName = value.string
            case 17: proto3Optional = value.bool
            default: break
            }
        }
    }
}

struct EnumDescriptor {
    var name = ""
    var values: [(name: String, number: Int)] = []

    init(_ bytes: ArraySlice<UInt8>) throws(GeneratorError) {
        var reader = ProtoReader(bytes)
        while case (let number, let value)? = try reader.next() {
            switch number {
            case 1: name = value.string
            case 2:
                var entry = ProtoReader(value.message)
                var valueName = ""
                var valueNumber = 0
                while case (let field, let part)? = try entry.next() {
                    if field == 1 { valueName = part.string }
                    if field == 2 { valueNumber = Int(Int32(truncatingIfNeeded: part.integer)) }
                }
                values.append((valueName, valueNumber))
            default: break
            }
        }
    }
}

struct ServiceDescriptor {
    struct Method {
        var name = ""
        var inputType = ""
        var outputType = ""
        var clientStreaming = false
        var serverStreaming = false
    }

    var name = ""
    var methods: [Method] = []

    init(_ bytes: ArraySlice<UInt8>) throws(GeneratorError) {
        var reader = ProtoReader(bytes)
        while case (let number, let value)? = try reader.next() {
            switch number {
            case 1: name = value.string
            case 2:
                var entry = ProtoReader(value.message)
                var method = Method()
                while case (let field, let part)? = try entry.next() {
                    switch field {
                    case 1: method.name = part.string
                    case 2: method.inputType = part.string
                    case 3: method.outputType = part.string
                    case 5: method.clientStreaming = part.bool
                    case 6: method.serverStreaming = part.bool
                    default: break
                    }
                }
                methods.append(method)
            default: break
            }
        }
    }
}
