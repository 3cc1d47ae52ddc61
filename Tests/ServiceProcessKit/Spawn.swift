import CSpawnShims
public import Foundation
import Glibc
import Synchronization

/// A child process started with `posix_spawn`, for the tests' own processes.
///
/// Not Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` to close the parent's
/// descriptors in the child and copies each directory entry's whole 256-byte name, reading past
/// glibc's buffer when an entry sits at its end — an intermittent crash in `memcpy` in a test
/// run that starts many processes (swift-corelibs-foundation pull request 5472). Here the child
/// closes every descriptor above its three with `posix_spawn_file_actions_addclosefrom_np`.
public final class SpawnedProcess: Sendable {
    /// What one of the child's standard descriptors is.
    public enum Stream: Sendable {
        case null
        /// A pipe whose other end the parent gets (`SpawnedProcess.input`, `.output`, `.errors`).
        case pipe
        /// The parent's own descriptor of the same number.
        case inherit
        /// stderr only: where stdout goes.
        case sameAsOutput
    }

    public let pid: Int32
    /// The parent's ends of the pipes asked for (nil otherwise); the caller owns and closes them.
    public let input: FileHandle?
    public let output: FileHandle?
    public let errors: FileHandle?
    private let status = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments` and exactly `environment`, in `directory` when
    /// given. Throws when it cannot be started.
    public init(
        _ executable: URL, _ arguments: [String] = [], environment: [String: String],
        directory: URL? = nil, stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32?] = [nil, nil, nil]
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        for (number, stream) in [stdin, stdout, stderr].enumerated() {
            switch stream {
            case .inherit:
                break
            case .sameAsOutput:
                posix_spawn_file_actions_adddup2(&actions, 1, Int32(number))
            case .null:
                posix_spawn_file_actions_addopen(
                    &actions, Int32(number), "/dev/null", number == 0 ? O_RDONLY : O_WRONLY, 0)
            case .pipe:
                var fds: [Int32] = [0, 0]
                guard cspawn_pipe_cloexec(&fds) == 0 else { throw ServiceProcessError("pipe2: errno \(errno)") }
                // fds[0] reads, fds[1] writes; the child takes the end that matches its descriptor.
                let (parent, child) = number == 0 ? (fds[1], fds[0]) : (fds[0], fds[1])
                parentEnds[number] = parent
                childEnds.append(child)
                posix_spawn_file_actions_adddup2(&actions, child, Int32(number))
            }
        }
        cspawn_add_closefrom(&actions, 3)
        if let directory { cspawn_add_chdir(&actions, directory.path) }
        let argv = ([executable.path] + arguments).map { strdup($0) }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer { for pointer in argv + envp { free(pointer) } }
        var child: Int32 = 0
        let result = (argv + [nil]).withUnsafeBufferPointer { arguments in
            (envp + [nil]).withUnsafeBufferPointer { environment in
                posix_spawn(
                    &child, executable.path, &actions, nil, UnsafeMutablePointer(mutating: arguments.baseAddress!),
                    UnsafeMutablePointer(mutating: environment.baseAddress!))
            }
        }
        guard result == 0 else {
            for fd in parentEnds.compactMap({ $0 }) { close(fd) }
            throw ServiceProcessError("cannot start \(executable.path): \(String(cString: strerror(result)))")
        }
        pid = child
        input = parentEnds[0].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        output = parentEnds[1].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        errors = parentEnds[2].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    /// The exit status once `wait` has seen the end (the signal's number when a signal ended
    /// it); nil while it runs.
    public var exitStatus: Int32? { status.withLock { $0 } }

    /// Blocks until the process ends and returns its exit status (the signal's number when a
    /// signal ended it). Call it from a thread of its own, not the cooperative pool.
    @discardableResult
    public func wait() -> Int32 {
        if let known = exitStatus { return known }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 {
            guard errno == EINTR else { return exitStatus ?? -1 }
        }
        let ended = raw & 0x7F != 0 ? raw & 0x7F : (raw >> 8) & 0xFF
        status.withLock { $0 = ended }
        return ended
    }

    /// Sends `signal` to the process (nothing once it has been reaped).
    public func send(_ signal: Int32) {
        guard exitStatus == nil else { return }
        _ = kill(pid, signal)
    }

    /// Runs `executable` to its end, blocking: its stdout and stderr together, and its exit status.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, output: String)
    {
        let child = try SpawnedProcess(
            executable, arguments, environment: environment ?? ProcessInfo.processInfo.environment, stdout: .pipe,
            stderr: .sameAsOutput)
        let output = child.output!.readDataToEndOfFile()
        return (child.wait(), String(decoding: output, as: UTF8.self))
    }
}
