public import Foundation
public import Lifecycle
public import RPC
import Wire

/// Carries out a parsed command: encodes requests, calls through a transport, and hands each
/// piece of output to `write` (one call per line or JSON document, without the newline).
public struct CommandRunner {
    let write: (String) -> Void
    let now: () -> Date
    let status: ((String) -> Void)?
    let interrupt: ShutdownSignal?

    /// `write` receives what goes to standard output; `now` is the time `apple verify` checks
    /// data without a `signedDate` at; `status`, when given (stdout is a terminal), receives a
    /// line that replaces the previous one: an import's progress bar; `interrupt` resolves when
    /// the operator stops the command (an import then stops and prints what it did).
    public init(
        write: @escaping (String) -> Void, now: @escaping () -> Date = Date.init, status: ((String) -> Void)? = nil,
        interrupt: ShutdownSignal? = nil
    ) {
        self.write = write
        self.now = now
        self.status = status
        self.interrupt = interrupt
    }

    /// Runs `command`. `transport` must be given for commands with `callOptions`;
    /// `standardInput` is read only for a call whose request is `-` and `apple verify -`.
    /// Throws a `SubctlError` to print with `OutputText.error` and exit with its `code.exitCode`.
    /// `entitlement` is the entitlement service's transport of `find --entitlement`.
    public func run(
        _ command: SubctlCommand, transport: (any ClientTransport)?, entitlement: (any ClientTransport)? = nil,
        standardInput: () -> String
    ) async throws(SubctlError) {
        switch command {
        case .help:
            write(SubctlCommand.usage)
        case .methods:
            write(OutputText.methods())
        case .describe(let name):
            write(try OutputText.describe(name))
        case .health(let candidates, let options):
            guard let transport else { preconditionFailure("health needs a transport") }
            for (index, method) in candidates.enumerated() {
                let answer: [UInt8]
                do {
                    answer = try await transport.callBytes(method, request: [], timeout: options.timeout)
                } catch  where error.code == .rpc(.unimplemented) && index < candidates.count - 1 {
                    continue
                }
                write(try OutputText.health(answer, address: options.address, json: options.json))
                return
            }
        case .call(let method, let source, let options):
            guard let transport else { preconditionFailure("call needs a transport") }
            let json =
                switch source {
                case .json(let text): text
                case .standardInput: standardInput()
                }
            let request = try JSONMessages.encode(json: json, as: method.inputType)
            if method.isServerStreaming {
                try await transport.readStream(method.fullName, request: request, timeout: options.timeout) {
                    message throws(SubctlError) in
                    write(try OutputText.response(message, of: method, json: options.json))
                    return true
                }
            } else {
                let answer = try await transport.callBytes(method.fullName, request: request, timeout: options.timeout)
                write(try OutputText.response(answer, of: method, json: options.json))
            }
        case .ledger(let command, let options):
            guard let transport else { preconditionFailure("ledger commands need a transport") }
            try await run(command, transport: transport, options: options)
        case .access(let command, let options):
            guard let transport else { preconditionFailure("access commands need a transport") }
            try await run(command, transport: transport, options: options)
        case .apple(let command):
            try run(command, standardInput: standardInput)
        case .google(let command, let options):
            guard let transport else { preconditionFailure("google commands need a transport") }
            try await run(command, transport: transport, options: options)
        case .appleOperation(let operation, let options):
            guard let transport else { preconditionFailure("apple operations need a transport") }
            try await run(operation, transport: transport, options: options)
        case .importFile(let options):
            try await runImport(options, transport: transport)
        case .find(let command, let options):
            guard let transport else { preconditionFailure("find needs a transport") }
            try await run(command, transport: transport, entitlement: entitlement, options: options)
        case .console(let options):
            try await ConsoleServer.run(options, ready: write, stop: interrupt ?? ShutdownSignal.installed())
        }
    }
}
