import BenchSupport
import Foundation
import Glibc

/// The service under test, started on free loopback ports in a fresh temporary directory (so
/// files it creates, such as a database, stay out of the caller's). Its stderr is read until
/// the "rpc server listening" log line names the port; after that it is copied to our stderr.
final class ServiceProcess {
    let child: ChildProcess
    let port: Int
    private let directory: String

    /// Starts `executable` and waits (at most `limit`) for its listening line. Throws when it
    /// cannot start, exits, or stays silent; it is stopped and its directory removed then.
    init(executable: String, limit: Duration = .seconds(20)) throws(BenchError) {
        var template = Array((FileManager.default.temporaryDirectory.path + "/rpcbench-service-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchError("mkdtemp: \(String(cString: strerror(errno)))") }
        let directory = String(cString: made)
        var environment = ProcessInfo.processInfo.environment
        // Plaintext on port 0, and info level: the listening line is an info line.
        for name in ["TLS_CERT", "TLS_KEY", "TLS_CA", "RPC_ALLOW"] { environment[name] = nil }
        environment["RPC_LISTEN"] = "127.0.0.1:0"
        environment["HTTP_LISTEN"] = "127.0.0.1:0"
        environment["LOG_LEVEL"] = "info"
        let pipe = Pipe()
        let child: ChildProcess
        let port: Int
        do throws(BenchError) {
            child = try ChildProcess(
                name: executable, executable: executable, arguments: [], environment: environment,
                directory: directory, errorOutput: pipe)
            // The copying thread gets its own descriptor, so it never reads a closed or reused one.
            let fd = dup(pipe.fileHandleForReading.fileDescriptor)
            try? pipe.fileHandleForReading.close()
            guard fd >= 0 else { throw BenchError("dup: \(String(cString: strerror(errno)))") }
            do throws(BenchError) {
                port = try Self.readUntilListening(fd, executable: executable, limit: limit)
            } catch {
                close(fd)
                child.stop()
                throw error
            }
            Self.copyToStandardError(fd)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        self.child = child
        self.port = port
        self.directory = directory
    }

    deinit { stop() }

    /// Stops the service (SIGTERM, then SIGKILL after 10 s) and removes its directory.
    /// Returns its exit status, nil when it had to be killed or died of a signal.
    @discardableResult
    func stop() -> Int32? {
        let status = child.stop()
        try? FileManager.default.removeItem(atPath: directory)
        return status
    }

    /// Reads the log from `fd` until a listening line names the port; echoes what it read.
    private static func readUntilListening(_ fd: Int32, executable: String, limit: Duration) throws(BenchError) -> Int {
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
                return port
            }
        }
    }

    /// Copies the rest of the log to our stderr on a thread of its own until the service exits;
    /// the thread closes `fd`.
    private static func copyToStandardError(_ fd: Int32) {
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
    static func listeningPort(in log: [UInt8]) -> Int? {
        for line in log.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                object["msg"] as? String == "rpc server listening",
                let address = object["address"] as? String,
                let port = address.split(separator: ":").last.flatMap({ Int($0) }), port > 0
            else { continue }
            return port
        }
        return nil
    }

    private static func tail(_ log: [UInt8]) -> String {
        let text = String(decoding: log, as: UTF8.self)
        return text.isEmpty ? "(no output)" : String(text.suffix(2000))
    }
}
