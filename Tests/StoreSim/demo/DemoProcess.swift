import Foundation
import Synchronization

/// One of the demo's child processes: an executable next to the demo's own, its standard error
/// (JSON log lines) kept and searched, stopped with SIGTERM.
final class DemoProcess: Sendable {
    let name: String
    private let process: Process
    private let output = Output()

    /// The lines read so far, shared with the reading thread.
    private final class Output: Sendable {
        let lines = Mutex<[String]>([])
    }

    /// The folder of the built executables (the demo's own).
    static var binDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    init(_ name: String, environment: [String: String], directory: URL, logFile: URL) throws {
        self.name = name
        process = Process()
        process.executableURL = Self.binDirectory.appendingPathComponent(name)
        var env = ["PATH": "/usr/bin:/bin", "RPC_LISTEN": "127.0.0.1:0", "HTTP_LISTEN": "127.0.0.1:0"]
        env.merge(environment) { _, new in new }
        process.environment = env
        process.currentDirectoryURL = directory
        FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let log = try FileHandle(forWritingTo: logFile)
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        let reader = pipe.fileHandleForReading
        let output = self.output
        Thread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                log.write(chunk)
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    output.lines.withLock { $0.append(line) }
                }
            }
        }.start()
        try process.run()
    }

    /// The first log line containing `text`, waiting at most `seconds`.
    func line(containing text: String, seconds: Double = 30) async throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let line = output.lines.withLock({ $0.first { $0.contains(text) } }) { return line }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DemoError("\(name) did not log \(text) (its log is in .run/demo)")
    }

    /// A field of a JSON log line.
    static func field(_ key: String, in line: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return nil
        }
        return object[key] as? String
    }

    /// The port of the line "rpc server listening" or "http server listening".
    func port(_ kind: String) async throws -> Int {
        let line = try await line(containing: "\"msg\":\"\(kind) server listening\"")
        let text =
            kind == "rpc"
            ? Self.field("address", in: line)?.split(separator: ":").last.map(String.init)
            : Self.field("port", in: line)
        guard let port = text.flatMap({ Int($0) }) else { throw DemoError("\(name) logged no \(kind) port") }
        return port
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
