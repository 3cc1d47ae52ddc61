public import Foundation
import Glibc
import Synchronization

/// A service executable started as a child process on free loopback ports. Its stderr (JSON
/// lines) is collected; the ports come from its own "listening" log lines.
public final class ServiceProcess: Sendable {
    public let name: String
    private let process: SpawnedProcess
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

    /// Starts `name` from `binDirectory` with `environment` over the loopback defaults; its
    /// stderr is also appended to `logFile` when one is given.
    public init(_ name: String, environment: [String: String] = [:], directory: URL? = nil, logFile: URL? = nil)
        throws
    {
        self.name = name
        var env = ["PATH": "/usr/bin:/bin", "RPC_LISTEN": "127.0.0.1:0", "HTTP_LISTEN": "127.0.0.1:0"]
        env.merge(environment) { _, new in new }
        process = try SpawnedProcess(
            Self.binDirectory.appendingPathComponent(name), environment: env, directory: directory, stderr: .pipe)
        let reader = process.errors!
        var log: FileHandle?
        if let logFile {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            log = try FileHandle(forWritingTo: logFile)
        }
        let thread = Thread { [output, log] in
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                log?.write(chunk)
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
            // Ended first, so that a waiter added from now on sees it and does not wait.
            output.logEnded.withLock { $0 = true }
            let left = output.waiters.withLock { list -> [CheckedContinuation<String?, Never>] in
                defer { list.removeAll() }
                return list.map(\.1)
            }
            for continuation in left { continuation.resume(returning: nil) }
        }
        let waiter = Thread { [process, output] in
            let status = process.wait()
            output.exit.withLock { $0 = status }
        }
        waiter.stackSize = 64 << 10
        waiter.start()
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
            // A line may have arrived between the two looks, or the log ended (nothing more
            // will wake the waiter).
            let late = output.lines.withLock { $0.first { $0.contains(text) } }
            if late != nil || output.logEnded.withLock({ $0 }) {
                let mine = output.waiters.withLock { list -> CheckedContinuation<String?, Never>? in
                    guard let index = list.firstIndex(where: { $0.0 == text }) else { return nil }
                    return list.remove(at: index).1
                }
                mine?.resume(returning: late)
            }
        }
    }

    /// The first stderr line containing `text`, as `line(containing:)` waits for it (woken by
    /// the line, or by the end of the log); throws when the process ends without one, or when
    /// `seconds` pass first (a guard against a hang: the waiter is then given up).
    public func line(containing text: String, within seconds: Double) async throws -> String {
        let output = self.output
        let guardTimer = DispatchWorkItem {
            let abandoned = output.waiters.withLock { list -> [CheckedContinuation<String?, Never>] in
                let mine = list.filter { $0.0 == text }.map(\.1)
                list.removeAll { $0.0 == text }
                return mine
            }
            for continuation in abandoned { continuation.resume(returning: nil) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: guardTimer)
        let found = await line(containing: text)
        guardTimer.cancel()
        if let found { return found }
        throw ServiceProcessError("\(name) did not log \(text) within \(seconds) s: \(log.suffix(5))")
    }

    /// The port in the "rpc server listening" line.
    public func rpcPort() async throws -> Int {
        guard let line = await line(containing: "\"msg\":\"rpc server listening\""),
            let port = Self.field("address", in: line)?.split(separator: ":").last.flatMap({ Int($0) })
        else { throw ServiceProcessError("\(name) never listened: \(log)") }
        return port
    }

    /// The port in the "ops server listening" line (the operations listener, `OPS_LISTEN`).
    public func opsPort() async throws -> Int {
        guard let line = await line(containing: "\"msg\":\"ops server listening\""),
            let port = Self.field("port", in: line).flatMap({ Int($0) })
        else { throw ServiceProcessError("\(name) never served its operations listener: \(log)") }
        return port
    }

    /// The process id.
    public var pid: Int32 { process.pid }

    /// The resident memory of the process now (VmRSS), in bytes.
    public var residentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }

    /// The port in the "http server listening" line.
    public func httpPort() async throws -> Int {
        guard let line = await line(containing: "\"msg\":\"http server listening\""),
            let port = Self.field("port", in: line).flatMap({ Int($0) })
        else { throw ServiceProcessError("\(name) never served HTTP: \(log)") }
        return port
    }

    public static func field(_ key: String, in line: String) -> String? {
        guard let data = line.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object[key] as? String
    }

    public func terminate() { process.send(SIGTERM) }

    /// Sends SIGTERM and waits for the process to end.
    public func stop() {
        guard process.exitStatus == nil else { return }
        process.send(SIGTERM)
        while output.exit.withLock({ $0 }) == nil { usleep(10_000) }
    }

    /// Sends SIGKILL: the process ends at once, without draining or closing its database.
    public func kill() { process.send(SIGKILL) }

    /// Waits for the process to end and returns its exit status (the signal's number when a
    /// signal ended it). It returns once the process's stderr has been read to its end too, so
    /// `log` then holds every line the process wrote.
    public func waitForExit() async -> Int32 {
        while true {
            if let status = output.exit.withLock({ $0 }), output.logEnded.withLock({ $0 }) { return status }
            // A poll of the waiter's record and of the pipe's end, not a wait for the test's own state.
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    deinit { process.send(SIGKILL) }
}

/// Why a service process did not do what was waited for.
public struct ServiceProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What the reader and waiter threads share with the callers.
final class ProcessOutput: Sendable {
    let lines = Mutex<[String]>([])
    let waiters = Mutex<[(String, CheckedContinuation<String?, Never>)]>([])
    /// The exit status, once the waiter has reaped the process.
    let exit = Mutex<Int32?>(nil)
    /// Whether the reader has seen the end of stderr (every line is in `lines`).
    let logEnded = Mutex(false)
}

/// Asks `done` again every `interval` until it holds or `limit` has passed; whether it held. For
/// the suites that watch other processes (whose state no clock of the test's moves): each wait
/// is for state they show, bounded several times over what a slow machine needs.
public func poll(
    within limit: Duration = .seconds(60), every interval: Duration = .milliseconds(10),
    _ done: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await done() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: interval)
    }
}
