import Foundation
import Glibc

/// The service under test, started on free loopback ports. Its stderr is read until the
/// "rpc server listening" log line names the port; after that it is copied to our stderr.
final class ServiceProcess {
    let child: ChildProcess
    let port: Int

    /// Starts `executable` and waits (at most `limit`) for its listening line.
    init(executable: String, limit: Duration = .seconds(20)) throws(BenchError) {
        var environment = ProcessInfo.processInfo.environment
        // Plaintext on port 0, and info level: the listening line is an info line.
        for name in ["TLS_CERT", "TLS_KEY", "TLS_CA", "RPC_ALLOW"] { environment[name] = nil }
        environment["RPC_LISTEN"] = "127.0.0.1:0"
        environment["HTTP_LISTEN"] = "127.0.0.1:0"
        environment["LOG_LEVEL"] = "info"
        let pipe = Pipe()
        child = try ChildProcess(
            name: executable, executable: executable, arguments: [], environment: environment, errorOutput: pipe)
        // The copy thread owns its own descriptor, so it never reads a closed or reused one.
        let fd = dup(pipe.fileHandleForReading.fileDescriptor)
        try? pipe.fileHandleForReading.close()
        guard fd >= 0 else { throw BenchError("dup: \(String(cString: strerror(errno)))") }

        var seen: [UInt8] = []
        let deadline = ContinuousClock.now + limit
        var found: Int?
        while found == nil {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                close(fd)
                throw BenchError("\(executable) logged no \"rpc server listening\" line within \(limit):\n\(Self.tail(seen))")
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left.components.seconds * 1000 + 1, 200)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else {
                close(fd)
                throw BenchError("\(executable) exited before it listened:\n\(Self.tail(seen))")
            }
            seen += chunk[0..<count]
            found = Self.listeningPort(in: seen)
        }
        port = found!
        FileHandle.standardError.write(Data(seen))
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
