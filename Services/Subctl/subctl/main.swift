// subctl: the operators' client. Parses the command line, connects when the command needs a
// service, runs it and exits 0 on success, 1 when the call failed, 2 on a usage error, 3 when
// `events verify` finds the event log wanting, and 10…17 when `apple verify` refuses the data
// (SubctlCommand.usage lists them). With -v, each call's trace id goes to standard error as
// `trace: <id>` before the call (standard output stays what scripts parse); after a failed
// call, its trace id follows the error line.
import Foundation
import Lifecycle
import RPC
import SubctlKit
import Synchronization

/// Writes `text` and a newline to `handle` at once (no buffering, so streams show as they arrive).
func emit(_ text: String, to handle: FileHandle) {
    handle.write(Data((text + "\n").utf8))
}

/// The trace id of the latest call made.
let lastTrace = Mutex<String?>(nil)

var status: Int32 = 0
do throws(SubctlError) {
    let arguments = TracedTransport.verbose(Array(CommandLine.arguments.dropFirst()))
    let command = try SubctlCommand.parse(arguments.rest)
    let transport = try command.callOptions.map { options throws(SubctlError) in try options.client() }
    defer { transport?.shutdown() }
    var entitlement: RPCClient?
    if case .find(let find, _) = command, let options = find.entitlement { entitlement = try options.client() }
    defer { entitlement?.shutdown() }
    /// Each call under a new trace, printed with -v; the last one is printed after an error.
    func traced(_ client: RPCClient?) -> (any ClientTransport)? {
        guard let client else { return nil }
        let verbose = arguments.verbose
        return TracedTransport(client) { trace in
            lastTrace.withLock { $0 = trace.traceID }
            if verbose { emit("trace: \(trace.traceID)", to: .standardError) }
        }
    }
    // The progress bar rewrites one line, only on a terminal.
    let status: ((String) -> Void)? =
        isatty(STDOUT_FILENO) == 1
        ? { FileHandle.standardOutput.write(Data("\r\u{1B}[K\($0)".utf8)) } : nil
    // An import stops on Ctrl-C or SIGTERM and prints what it did; other commands end as before.
    var interrupt: ShutdownSignal?
    if case .importFile = command { interrupt = ShutdownSignal.installed() }
    let runner = CommandRunner(write: { emit($0, to: .standardOutput) }, status: status, interrupt: interrupt)
    try await runner.run(command, transport: traced(transport), entitlement: traced(entitlement)) {
        String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
    }
} catch {
    emit(OutputText.error(error), to: .standardError)
    // The call's trace, to find what each service logged of it (`subctl trace ID`).
    if error.code.status != nil, let trace = lastTrace.withLock({ $0 }) { emit("trace: \(trace)", to: .standardError) }
    if error.code == .usage { emit("run subctl --help for usage", to: .standardError) }
    status = error.code.exitCode
}
exit(status)
