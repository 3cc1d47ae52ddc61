import Foundation
import Glibc

/// A process the benchmark started. `stop()` ends it with SIGTERM, then SIGKILL when it does not
/// exit within the grace period; it is idempotent and also runs on deinit, so no child outlives
/// a failed run.
final class ChildProcess {
    let name: String
    private let process = Process()
    private var exitStatus: Int32?
    private var started = false

    /// Starts `executable` (a path, or a name looked up on PATH) in `directory` (nil: ours).
    /// `output` receives stdout and stderr unless `errorOutput` is given for stderr; nil means
    /// /dev/null.
    init(
        name: String, executable: String, arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, output: FileHandle? = nil, errorOutput: Pipe? = nil
    ) throws(BenchError) {
        self.name = name
        guard let path = Self.resolve(executable) else {
            throw BenchError("\(executable) not found\(executable.contains("/") ? "" : " on PATH")")
        }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = errorOutput ?? output ?? FileHandle.nullDevice
        do {
            try process.run()
            started = true
        } catch {
            throw BenchError("cannot start \(path): \(error)")
        }
    }

    deinit { stop() }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// Sends SIGTERM, waits up to `grace`, then SIGKILL. Returns the exit status, or nil when the
    /// process had to be killed or died of a signal.
    @discardableResult
    func stop(grace: Duration = .seconds(10)) -> Int32? {
        guard started else { return nil }
        if let exitStatus { return exitStatus >= 0 ? exitStatus : nil }
        if process.isRunning {
            process.terminate()
            if !waitForExit(within: grace) {
                kill(pid, SIGKILL)
                _ = waitForExit(within: .seconds(5))
            }
        }
        guard !process.isRunning else { return nil }
        let status = process.terminationReason == .exit ? process.terminationStatus : -1
        exitStatus = status
        return status >= 0 ? status : nil
    }

    /// Polls until the process exited or `limit` passed; true when it exited.
    func waitForExit(within limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        return !process.isRunning
    }

    /// Runs a command to completion within `limit` and returns its exit status and its stdout and
    /// stderr together (through a temporary file, so a chatty command cannot block on a pipe).
    static func runToCompletion(
        _ executable: String, _ arguments: [String], limit: Duration
    ) throws(BenchError) -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("rpcbench-\(UUID().uuidString).out")
        guard FileManager.default.createFile(atPath: file.path, contents: nil),
            let handle = FileHandle(forWritingAtPath: file.path)
        else { throw BenchError("cannot create \(file.path)") }
        defer {
            try? handle.close()
            try? FileManager.default.removeItem(at: file)
        }
        let child = try ChildProcess(name: executable, executable: executable, arguments: arguments, output: handle)
        guard child.waitForExit(within: limit) else {
            child.stop(grace: .seconds(2))
            throw BenchError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(limit)")
        }
        let output = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return (child.stop() ?? -1, output)
    }

    /// The absolute path of `executable`: itself (made absolute) when it contains a slash, else
    /// the first match on PATH.
    static func resolve(_ executable: String) -> String? {
        if executable.contains("/") {
            let path =
                executable.hasPrefix("/") ? executable : FileManager.default.currentDirectoryPath + "/" + executable
            return access(path, X_OK) == 0 ? path : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(executable)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
