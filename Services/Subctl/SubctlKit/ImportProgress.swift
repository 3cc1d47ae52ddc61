import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The durable record of an import's outcomes: one JSON line per finished subscription.
///
/// Opening reads what an earlier run finished (a torn last line, from a kill during a write, is
/// dropped), writes it back to a temporary file that is synced and renamed over the progress
/// file (so the file is never half-written), and then appends each new outcome with a sync
/// before `record` returns: an outcome on disk is never lost, and one not yet on disk is done
/// again, by the same idempotency key.
public final class ImportProgress {
    public let path: String
    /// Outcomes by item id, earlier runs' and this one's.
    public private(set) var outcomes: [String: ImportOutcome] = [:]
    private var descriptor: Int32 = -1

    /// Opens (or creates) the progress file at `path`. Throws `invalidArgument` when it cannot
    /// be read, written or synced.
    public init(path: String) throws(SubctlError) {
        self.path = path
        var finished: [ImportOutcome] = []
        if let data = FileManager.default.contents(atPath: path) {
            let decoder = JSONDecoder()
            for line in data.split(separator: UInt8(ascii: "\n")) {
                guard let outcome = try? decoder.decode(ImportOutcome.self, from: Data(line)) else { continue }
                if outcomes.updateValue(outcome, forKey: outcome.id) == nil { finished.append(outcome) }
            }
        }
        let temporary = path + ".tmp"
        var text = Data()
        for outcome in finished { text.append(Self.line(outcome)) }
        try Self.writeSynced(text, to: temporary)
        guard rename(temporary, path) == 0 else { throw Self.failure("rename \(temporary) to", path) }
        try Self.syncDirectory(of: path)
        descriptor = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.failure("open", path) }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Appends `outcome` and syncs the file before returning.
    public func record(_ outcome: ImportOutcome) throws(SubctlError) {
        let line = Self.line(outcome)
        try Self.writeAll(line, to: descriptor, path: path)
        guard fsync(descriptor) == 0 else { throw Self.failure("fsync", path) }
        outcomes[outcome.id] = outcome
    }

    /// The progress file beside `input`: `INPUT.progress`.
    public static func defaultPath(for input: String) -> String { input + ".progress" }

    private static func line(_ outcome: ImportOutcome) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var data = (try? encoder.encode(outcome)) ?? Data()
        data.append(UInt8(ascii: "\n"))
        return data
    }

    private static func writeSynced(_ data: Data, to path: String) throws(SubctlError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("create", path) }
        defer { close(descriptor) }
        try writeAll(data, to: descriptor, path: path)
        guard fsync(descriptor) == 0 else { throw failure("fsync", path) }
    }

    private static func writeAll(_ data: Data, to descriptor: Int32, path: String) throws(SubctlError) {
        let failed = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return true
                }
                offset += written
            }
            return false
        }
        if failed { throw failure("write", path) }
    }

    /// Syncs the directory holding `path`, so a rename into it survives a crash.
    private static func syncDirectory(of path: String) throws(SubctlError) {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("open the directory of", path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("fsync the directory of", path) }
    }

    private static func failure(_ what: String, _ path: String) -> SubctlError {
        SubctlError(.invalidArgument, "cannot \(what) the progress file \(path): \(String(cString: strerror(errno)))")
    }
}
