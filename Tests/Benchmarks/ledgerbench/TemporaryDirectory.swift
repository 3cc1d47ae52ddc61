import BenchSupport
import Foundation
import Glibc

/// A fresh directory under the system temporary directory, removed with everything in it by
/// `remove()` or, at the latest, on deinit.
final class TemporaryDirectory {
    let path: String
    private var removed = false
    private let interruption: Int

    /// Makes `<tmp>/ledgerbench-<label>-XXXXXX` (mode 0700). Throws when mkdtemp fails.
    init(_ label: String) throws(BenchError) {
        var template = Array((FileManager.default.temporaryDirectory.path + "/ledgerbench-\(label)-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchError("mkdtemp: \(String(cString: strerror(errno)))") }
        let path = String(cString: made)
        self.path = path
        interruption = Interruption.add { try? FileManager.default.removeItem(atPath: path) }
    }

    deinit { remove() }

    /// `path/name`.
    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `path/name` and returns that path.
    func write(_ name: String, _ text: String) throws(BenchError) -> String {
        let target = file(name)
        do {
            try text.write(toFile: target, atomically: false, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(target): \(error)")
        }
        return target
    }

    func remove() {
        guard !removed else { return }
        removed = true
        try? FileManager.default.removeItem(atPath: path)
        Interruption.remove(interruption)
    }
}
