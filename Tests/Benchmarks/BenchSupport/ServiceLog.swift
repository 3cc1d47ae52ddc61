public import Foundation
import Glibc

/// Reading a service's JSON log lines on its stderr: until the listening line names the port,
/// then copying the rest to our stderr.
public enum ServiceLog {
    /// Reads the log from `fd` until a listening line names the port; echoes what it read.
    public static func readUntilListening(_ fd: Int32, executable: String, limit: Duration) throws(BenchError) -> Int {
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

    static func tail(_ log: [UInt8]) -> String {
        let text = String(decoding: log, as: UTF8.self)
        return text.isEmpty ? "(no output)" : String(text.suffix(2000))
    }
}
