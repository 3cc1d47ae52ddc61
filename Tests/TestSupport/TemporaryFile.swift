import Foundation

/// Files under the temporary directory for key-loading tests.
public enum TemporaryFile {
    /// Writes `text` to a new file named `<prefix>-<UUID>.<pathExtension>` and returns its path.
    public static func write(_ text: String, prefix: String = "app-store", pathExtension: String = "p8") throws
        -> String
    {
        let name = "\(prefix)-\(UUID()).\(pathExtension)"
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Removes the file at `path`, if there is one.
    public static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }
}
