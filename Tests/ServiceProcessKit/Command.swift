import Dispatch
public import Foundation
import Synchronization

/// What a command run to its end printed, and how it ended.
public struct CommandResult: Sendable {
    public let status: Int32
    /// Its stdout as it came.
    public let outputBytes: Data
    public let errors: String
    /// Its stdout as UTF-8 text.
    public var output: String { String(decoding: outputBytes, as: UTF8.self) }
}

/// Runs `executable` with `arguments` (and `input` on its stdin) to its end on threads of its
/// own: its blocking reads and wait never hold a thread of the cooperative pool, which the
/// tests' tasks and the in-process servers' handlers share (two threads on two cores).
public func runCommand(
    _ executable: URL, _ arguments: [String], input: Data? = nil, directory: URL? = nil,
    environment: [String: String]? = nil
) async throws -> CommandResult {
    try await withCheckedThrowingContinuation { continuation in
        let runner = Thread {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            if let directory { process.currentDirectoryURL = directory }
            if let environment { process.environment = environment }
            let (stdin, stdout, stderr) = (Pipe(), Pipe(), Pipe())
            process.standardInput = stdin
            process.standardOutput = stdout
            process.standardError = stderr
            do { try process.run() } catch { return continuation.resume(throwing: error) }
            // stderr is drained beside stdout, so that neither pipe fills while the other is read.
            let errors = Mutex(Data())
            let errorsRead = DispatchSemaphore(value: 0)
            Thread {
                let data = stderr.fileHandleForReading.readDataToEndOfFile()
                errors.withLock { $0 = data }
                errorsRead.signal()
            }.start()
            if let input { stdin.fileHandleForWriting.write(input) }
            try? stdin.fileHandleForWriting.close()
            let output = stdout.fileHandleForReading.readDataToEndOfFile()
            errorsRead.wait()
            process.waitUntilExit()
            continuation.resume(
                returning: CommandResult(
                    status: process.terminationStatus, outputBytes: output,
                    errors: String(decoding: errors.withLock { $0 }, as: UTF8.self)))
        }
        // Process.run builds the child's argv and environment on the stack: a thread's default
        // 512 KiB overflows with a large environment.
        runner.stackSize = 8 << 20
        runner.start()
    }
}
