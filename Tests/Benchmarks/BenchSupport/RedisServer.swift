import Foundation
import Glibc

/// A throwaway redis-server on a free loopback port, without persistence, answering PING.
public final class RedisServer {
    public let child: ChildProcess
    public let port: Int
    private let logPath: String

    /// Starts redis-server and waits (at most `limit`) until `redis-cli ping` answers PONG.
    public init(limit: Duration = .seconds(10)) throws(BenchError) {
        port = try LoopbackAddress.freePort()
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent("bench-redis-\(port).log").path
        guard FileManager.default.createFile(atPath: logPath, contents: nil),
            let log = FileHandle(forWritingAtPath: logPath)
        else { throw BenchError("cannot create \(logPath)") }
        defer { try? log.close() }
        do {
            child = try ChildProcess(
                name: "redis-server", executable: "redis-server",
                arguments: ["--port", "\(port)", "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
                output: log)
        } catch {
            try? FileManager.default.removeItem(atPath: logPath)
            throw error
        }
        // From here on deinit runs on a throw: it stops the server and removes the log.
        let deadline = ContinuousClock.now + limit
        while true {
            guard child.isRunning else { throw BenchError("redis-server exited at start:\n\(logTail())") }
            let ping = try ChildProcess.runToCompletion("redis-cli", ["-p", "\(port)", "ping"], limit: .seconds(5))
            if ping.output.contains("PONG") { return }
            guard ContinuousClock.now < deadline else {
                throw BenchError("redis-server on port \(port) did not answer PING within \(limit):\n\(logTail())")
            }
            usleep(50_000)
        }
    }

    deinit { stop() }

    /// Stops the server and removes its log.
    public func stop() {
        child.stop()
        try? FileManager.default.removeItem(atPath: logPath)
    }

    private func logTail() -> String {
        String(((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)").suffix(2000))
    }
}
