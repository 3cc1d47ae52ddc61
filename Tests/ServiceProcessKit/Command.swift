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
            let child: SpawnedProcess
            do {
                child = try SpawnedProcess(
                    executable, arguments, environment: environment ?? ProcessInfo.processInfo.environment,
                    directory: directory, stdin: .pipe, stdout: .pipe, stderr: .pipe)
            } catch { return continuation.resume(throwing: error) }
            // stderr is drained beside stdout, so that neither pipe fills while the other is read.
            let errors = Mutex(Data())
            let errorsRead = DispatchSemaphore(value: 0)
            Thread {
                let data = child.errors!.readDataToEndOfFile()
                errors.withLock { $0 = data }
                errorsRead.signal()
            }.start()
            if let input { child.input!.write(input) }
            try? child.input!.close()
            let output = child.output!.readDataToEndOfFile()
            errorsRead.wait()
            let status = child.wait()
            continuation.resume(
                returning: CommandResult(
                    status: status, outputBytes: output,
                    errors: String(decoding: errors.withLock { $0 }, as: UTF8.self)))
        }
        runner.stackSize = 1 << 20
        runner.start()
    }
}
