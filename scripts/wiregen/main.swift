// wiregen: the Swift message layer of Wire from the protos' descriptor set.
// Usage: wiregen DESCRIPTOR_SET OUTPUT_DIRECTORY (scripts/generate-proto runs it).
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let input = arguments.first, let output = arguments.last else {
    FileHandle.standardError.write(Data("usage: wiregen DESCRIPTOR_SET OUTPUT_DIRECTORY\n".utf8))
    exit(2)
}
do {
    guard let data = FileManager.default.contents(atPath: input) else { throw GeneratorError("cannot read \(input)") }
    let schema = try Schema(files: FileDescriptor.decodeSet([UInt8](data)))
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    for file in schema.files {
        var emitter = Emitter(schema: schema, file: file)
        guard let source = try emitter.emit() else { continue }
        // proto/subscriptions/ledger/v1/ledger.proto → LedgerV1.swift
        let parts = file.package.split(separator: ".").dropFirst()
        let name = parts.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + ".swift"
        try Data(source.utf8).write(to: URL(fileURLWithPath: output).appendingPathComponent(name))
    }
} catch {
    FileHandle.standardError.write(Data("wiregen: \(error)\n".utf8))
    exit(1)
}
