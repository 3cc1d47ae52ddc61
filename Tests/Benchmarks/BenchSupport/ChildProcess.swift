public import Foundation
import Glibc

/// A process the benchmark started. `stop()` ends it with SIGTERM, then SIGKILL when it does not
/// exit within the grace period; it is idempotent and also runs on deinit, so no child outlives
/// a failed run.
public final class ChildProcess {
    public let name: String
    private let process = Process()
    private var exitStatus: Int32?
    private var started = false

    /// Starts `executable` (a path, or a name looked up on PATH) in `directory` (nil: ours).
    /// `output` receives stdout and stderr unless `errorOutput` is given for stderr; nil means
    /// /dev/null.
    public init(
        name: String, executable: String, arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, output: FileHandle? = nil, errorOutput: Any? = nil
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

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Sends SIGTERM, waits up to `grace`, then SIGKILL. Returns the exit status, or nil when the
    /// process had to be killed or died of a signal.
    @discardableResult
    public func stop(grace: Duration = .seconds(10)) -> Int32? {
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
    public func waitForExit(within limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        return !process.isRunning
    }

    /// Runs a command to completion within `limit` and returns its exit status and its stdout and
    /// stderr together (through a temporary file, so a chatty command cannot block on a pipe).
    /// With `separateStandardError`, `output` is stdout alone when the command succeeds, and
    /// stdout followed by stderr when it fails.
    ///
    /// It is spawned with posix_spawn and reaped with waitpid, not with Foundation's Process:
    /// Process learns of an exit when every holder of a descriptor it passes to the child has
    /// closed it, and a command that starts a daemon (pg_ctl start) hands that on to the daemon.
    public static func runToCompletion(
        _ executable: String, _ arguments: [String], limit: Duration, separateStandardError: Bool = false
    ) throws(BenchError) -> (status: Int32, output: String) {
        guard let path = resolve(executable) else {
            throw BenchError("\(executable) not found\(executable.contains("/") ? "" : " on PATH")")
        }
        let outputPath = temporaryPath()
        let errorPath = separateStandardError ? temporaryPath() : outputPath
        defer {
            unlink(outputPath)
            if separateStandardError { unlink(errorPath) }
        }
        let status = try spawnAndWait(path, arguments, output: outputPath, error: errorPath, limit: limit)
        var output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        if separateStandardError && status != 0 {
            output += (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        }
        return (status, output)
    }

    /// Spawns `path` with stdin from /dev/null and stdout and stderr appended to the given
    /// files; waits for it (SIGKILL after `limit`). Returns its exit status, -1 for a signal.
    private static func spawnAndWait(
        _ path: String, _ arguments: [String], output: String, error: String, limit: Duration
    ) throws(BenchError) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, error, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        // argv and envp are C strings owned here until posix_spawn returns.
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))") }
        let deadline = ContinuousClock.now + limit
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR {
                throw BenchError("waitpid \(path): \(String(cString: strerror(errno)))")
            }
            if ContinuousClock.now >= deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw BenchError(
                    "\(path) \(arguments.joined(separator: " ").prefix(300)) did not finish within \(limit)")
            }
            usleep(5_000)
        }
        // WIFEXITED / WEXITSTATUS are macros: the low 7 bits are the signal, the next 8 the status.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    private static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("ledgerbench-\(UUID().uuidString).out").path
    }

    /// The absolute path of `executable`: itself (made absolute) when it contains a slash, else
    /// the first match on PATH.
    public static func resolve(_ executable: String) -> String? {
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
