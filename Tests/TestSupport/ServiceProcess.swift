public import Foundation
import FoundationNetworking
import Glibc
import Synchronization
import Testing

/// A service executable started as a child process on free loopback ports. Its stderr (JSON
/// lines) is collected; the ports come from its own "listening" log lines.
public final class ServiceProcess: Sendable {
    public let name: String
    private let process: Process
    private let output = ProcessOutput()

    /// The folder holding the built executables: `SUBSCRIPTIONS_BIN_DIR`, else the folder of
    /// the test bundle (SwiftPM puts both in the same build folder).
    public static var binDirectory: URL {
        if let dir = ProcessInfo.processInfo.environment["SUBSCRIPTIONS_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("ledger").path) {
            url.deleteLastPathComponent()
        }
        return url
    }

    public init(_ name: String, environment: [String: String] = [:], directory: URL? = nil) throws {
        self.name = name
        process = Process()
        process.executableURL = Self.binDirectory.appendingPathComponent(name)
        var env = ["PATH": "/usr/bin:/bin", "RPC_LISTEN": "127.0.0.1:0", "HTTP_LISTEN": "127.0.0.1:0"]
        env.merge(environment) { _, new in new }
        process.environment = env
        if let directory { process.currentDirectoryURL = directory }
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        let reader = pipe.fileHandleForReading
        let thread = Thread { [output] in
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    output.lines.withLock { $0.append(line) }
                    let ready = output.waiters.withLock { list -> [CheckedContinuation<String?, Never>] in
                        let matched = list.filter { line.contains($0.0) }.map(\.1)
                        list.removeAll { line.contains($0.0) }
                        return matched
                    }
                    for continuation in ready { continuation.resume(returning: line) }
                }
            }
            let left = output.waiters.withLock { list -> [CheckedContinuation<String?, Never>] in
                defer { list.removeAll() }
                return list.map(\.1)
            }
            for continuation in left { continuation.resume(returning: nil) }
        }
        process.terminationHandler = { [output] process in
            let status = process.terminationStatus
            let waiting = output.exit.withLock { state -> [CheckedContinuation<Int32, Never>] in
                state.status = status
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiting { waiter.resume(returning: status) }
        }
        try process.run()
        thread.start()
    }

    /// Every stderr line so far.
    public var log: [String] { output.lines.withLock { $0 } }

    /// The first stderr line containing `text`; nil if the process ended without one.
    public func line(containing text: String) async -> String? {
        await withCheckedContinuation { continuation in
            let found = output.lines.withLock { $0.first { $0.contains(text) } }
            if let found { return continuation.resume(returning: found) }
            output.waiters.withLock { $0.append((text, continuation)) }
            // A line may have arrived between the two looks.
            if let late = output.lines.withLock({ $0.first { $0.contains(text) } }) {
                let mine = output.waiters.withLock { list -> CheckedContinuation<String?, Never>? in
                    guard let index = list.firstIndex(where: { $0.0 == text }) else { return nil }
                    return list.remove(at: index).1
                }
                mine?.resume(returning: late)
            }
        }
    }

    /// The port in the "rpc server listening" line.
    public func rpcPort() async throws -> Int {
        let line = try #require(
            await line(containing: "\"msg\":\"rpc server listening\""), "\(name) never listened: \(log)")
        let address = try #require(Self.field("address", in: line))
        return try #require(Int(address.split(separator: ":").last ?? ""))
    }

    /// The port in the "http server listening" line.
    public func httpPort() async throws -> Int {
        let line = try #require(
            await line(containing: "\"msg\":\"http server listening\""), "\(name) never served HTTP: \(log)")
        return try #require(Int(Self.field("port", in: line) ?? ""))
    }

    public static func field(_ key: String, in line: String) -> String? {
        guard let data = line.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object[key] as? String
    }

    public func terminate() { process.terminate() }

    /// Sends SIGKILL: the process ends at once, without draining or closing its database.
    public func kill() { _ = Glibc.kill(process.processIdentifier, SIGKILL) }

    /// Waits for the process to end and returns its exit status.
    public func waitForExit() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = output.exit.withLock { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    deinit { if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) } }
}

/// GET over HTTP/1.1 on loopback; returns the status and body.
public func httpGet(port: Int, path: String) async throws -> (Int, String) {
    let url = try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
    let (data, response) = try await URLSession.shared.data(from: url)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    return (status, String(decoding: data, as: UTF8.self))
}

/// POSTs `body` to 127.0.0.1:`port``path`; returns the status and the body.
public func httpPost(port: Int, path: String, body: String) async throws -> (Int, String) {
    var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)\(path)")))
    request.httpMethod = "POST"
    request.httpBody = Data(body.utf8)
    let (data, response) = try await URLSession.shared.data(for: request)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    return (status, String(decoding: data, as: UTF8.self))
}

/// What the reader thread and the termination handler share with the tests.
final class ProcessOutput: Sendable {
    let lines = Mutex<[String]>([])
    let waiters = Mutex<[(String, CheckedContinuation<String?, Never>)]>([])
    let exit = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))
}
