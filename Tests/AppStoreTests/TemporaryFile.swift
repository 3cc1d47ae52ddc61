import Foundation

/// Files under the temporary directory for key-loading tests.
enum TemporaryFile {
    static func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("app-store-\(UUID()).p8").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }
}
