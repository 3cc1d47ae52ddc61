// wiregen: the Swift message layer of Wire, and the enums of Model, from the protos' descriptor set.
// Usage: wiregen DESCRIPTOR_SET WIRE_DIRECTORY MODEL_DIRECTORY (scripts/generate-proto runs it).
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: wiregen DESCRIPTOR_SET WIRE_DIRECTORY MODEL_DIRECTORY\n".utf8))
    exit(2)
}
let input = arguments[arguments.startIndex]
let outputs: [(Emitter.Module, String)] = [
    (.wire, arguments[arguments.startIndex + 1]), (.model, arguments[arguments.startIndex + 2]),
]
do {
    guard let data = FileManager.default.contents(atPath: input) else { throw GeneratorError("cannot read \(input)") }
    let schema = try Schema(files: FileDescriptor.decodeSet([UInt8](data)))
    for (module, output) in outputs {
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        for file in schema.files {
            var emitter = Emitter(schema: schema, file: file, module: module)
            guard let source = try emitter.emit() else { continue }
            // proto/subscriptions/ledger/v1/ledger.proto → LedgerV1.swift
            let parts = file.package.split(separator: ".").dropFirst()
            let name = parts.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + ".swift"
            try Data(source.utf8).write(to: URL(fileURLWithPath: output).appendingPathComponent(name))
        }
    }
    let table = try SchemaEmitter(schema: schema).emit()
    try Data(table.utf8).write(to: URL(fileURLWithPath: outputs[0].1).appendingPathComponent("ProtoSchema.swift"))
} catch {
    FileHandle.standardError.write(Data("wiregen: \(error)\n".utf8))
    exit(1)
}
