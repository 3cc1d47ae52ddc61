import Foundation
import Glibc

/// A fresh directory under the system temporary directory, removed with everything in it by
/// `remove()` or, at the latest, on deinit.
public final class TemporaryDirectory {
    public let path: String
    private var removed = false
    private let interruption: Int

    /// Makes `<tmp>/<name>-XXXXXX` (mode 0700). Throws when mkdtemp fails.
    public init(_ name: String) throws(BenchError) {
        var template = Array((FileManager.default.temporaryDirectory.path + "/\(name)-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchError("mkdtemp: \(String(cString: strerror(errno)))") }
        let path = String(cString: made)
        self.path = path
        interruption = Interruption.add { try? FileManager.default.removeItem(atPath: path) }
    }

    deinit { remove() }

    /// `path/name`.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `path/name` and returns that path.
    public func write(_ name: String, _ text: String) throws(BenchError) -> String {
        let target = file(name)
        do {
            try text.write(toFile: target, atomically: false, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(target): \(error)")
        }
        return target
    }

    public func remove() {
        guard !removed else { return }
        removed = true
        try? FileManager.default.removeItem(atPath: path)
        Interruption.remove(interruption)
    }
}
