import Foundation

/// A fresh folder under FileManager's temporary directory; call `remove()` when done.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("CryptoTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the folder.
    func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// Writes `text` to `name` inside the folder and returns its path.
    @discardableResult
    func write(_ text: String, to name: String) throws -> String {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
        return path(name)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
