import Foundation
import Glibc

/// Reading a service's JSON log lines on its stderr: until the listening line names the port,
/// then copying the rest to our stderr.
public enum ServiceLog {
    /// Starts a service `executable` in `directory` with plaintext RPC and HTTP on free loopback
    /// ports (port 0) at log level info, the variables in `clearing` removed and `settings`
    /// added, and reads its stderr (at most `limit`) until the listening line names the port;
    /// after that its log is copied to our stderr. `onStart` gets the process id as soon as it
    /// runs. Throws when it cannot start, exits, or stays silent; it is stopped then.
    public static func launch(
        _ executable: String, clearing: [String] = [], settings: [String: String] = [:], directory: String,
        limit: Duration, onStart: (Int32) -> Void = { _ in }
    ) throws(BenchError) -> (child: ChildProcess, port: Int, httpPort: Int?) {
        var environment = ProcessInfo.processInfo.environment
        // Plaintext on port 0, and info level: the listening line is an info line.
        for name in ["TLS_CERT", "TLS_KEY", "TLS_CA", "RPC_ALLOW"] + clearing { environment[name] = nil }
        environment["RPC_LISTEN"] = "127.0.0.1:0"
        environment["HTTP_LISTEN"] = "127.0.0.1:0"
        environment["LOG_LEVEL"] = "info"
        environment.merge(settings) { _, new in new }
        let pipe = Pipe()
        let child = try ChildProcess(
            name: executable, executable: executable, arguments: [], environment: environment, directory: directory,
            errorOutput: pipe)
        onStart(child.pid)
        // The copying thread gets its own descriptor, so it never reads a closed or reused one.
        let fd = dup(pipe.fileHandleForReading.fileDescriptor)
        try? pipe.fileHandleForReading.close()
        guard fd >= 0 else {
            child.stop()
            throw BenchError("dup: \(String(cString: strerror(errno)))")
        }
        do throws(BenchError) {
            let (port, httpPort) = try readUntilListening(fd, executable: executable, limit: limit)
            copyToStandardError(fd)
            return (child, port, httpPort)
        } catch {
            close(fd)
            child.stop()
            throw error
        }
    }

    /// Reads the log from `fd` until a listening line names the RPC port; echoes what it read.
    /// Also returns the HTTP port when the log named it before (services start HTTP first).
    public static func readUntilListening(
        _ fd: Int32, executable: String, limit: Duration
    ) throws(BenchError) -> (rpc: Int, http: Int?) {
        var seen: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + limit
        while true {
            guard ContinuousClock.now < deadline else {
                throw BenchError(
                    "\(executable) logged no \"rpc server listening\" line within \(limit):\n\(tail(seen))")
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw BenchError("\(executable) exited before it listened:\n\(tail(seen))") }
            seen += chunk[0..<count]
            if let port = listeningPort(in: seen) {
                FileHandle.standardError.write(Data(seen))
                return (port, httpPort(in: seen))
            }
        }
    }

    /// Copies the rest of the log to our stderr on a thread of its own until the service exits;
    /// the thread closes `fd`.
    public static func copyToStandardError(_ fd: Int32) {
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(fd, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                _ = chunk.withUnsafeBytes { write(2, $0.baseAddress, count) }
            }
            close(fd)
        }
    }

    /// The port of the first complete `"msg":"rpc server listening"` line in `log`.
    public static func listeningPort(in log: [UInt8]) -> Int? {
        firstLine(in: log, message: "rpc server listening") { object in
            (object["address"] as? String)?.split(separator: ":").last.flatMap { Int($0) }
        }
    }

    /// The port of the first complete `"msg":"http server listening"` line in `log`.
    public static func httpPort(in log: [UInt8]) -> Int? {
        firstLine(in: log, message: "http server listening") { object in (object["port"] as? String).flatMap { Int($0) }
        }
    }

    private static func firstLine(in log: [UInt8], message: String, port: ([String: Any]) -> Int?) -> Int? {
        for line in log.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                object["msg"] as? String == message, let found = port(object), found > 0
            else { continue }
            return found
        }
        return nil
    }

    static func tail(_ log: [UInt8]) -> String {
        let text = String(decoding: log, as: UTF8.self)
        return text.isEmpty ? "(no output)" : String(text.suffix(2000))
    }
}
