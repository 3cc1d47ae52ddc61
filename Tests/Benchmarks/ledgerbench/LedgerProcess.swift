import BenchSupport
import Foundation
import Glibc

/// The ledger under test, started with RPC on a free loopback port (port 0) in a directory the
/// caller owns. Its stderr is read until the "rpc server listening" JSON log line names the
/// port; after that it is copied to our stderr.
final class LedgerProcess {
    let child: ChildProcess
    let port: Int
    private let interruption: Int

    /// Starts `executable` with the ledger variables in `settings` and waits (at most `limit`)
    /// for its listening line. Throws when it cannot start, exits, or stays silent; it is
    /// stopped then.
    init(executable: String, settings: [String: String], directory: String, limit: Duration = .seconds(30))
        throws(BenchError)
    {
        var environment = ProcessInfo.processInfo.environment
        // Plaintext on port 0, and info level: the listening line is an info line.
        for name in ["TLS_CERT", "TLS_KEY", "TLS_CA", "RPC_ALLOW", "LEDGER_STORE", "LEDGER_SQLITE_PATH"] {
            environment[name] = nil
        }
        environment["RPC_LISTEN"] = "127.0.0.1:0"
        environment["HTTP_LISTEN"] = "127.0.0.1:0"
        environment["LOG_LEVEL"] = "info"
        environment.merge(settings) { _, new in new }
        let pipe = Pipe()
        child = try ChildProcess(
            name: executable, executable: executable, arguments: [], environment: environment, directory: directory,
            errorOutput: pipe)
        let pid = child.pid
        interruption = Interruption.add { kill(pid, SIGKILL) }
        // The copying thread gets its own descriptor, so it never reads a closed or reused one.
        let fd = dup(pipe.fileHandleForReading.fileDescriptor)
        try? pipe.fileHandleForReading.close()
        guard fd >= 0 else { throw BenchError("dup: \(String(cString: strerror(errno)))") }
        do throws(BenchError) {
            port = try Self.readUntilListening(fd, executable: executable, limit: limit)
        } catch {
            close(fd)
            child.stop()
            Interruption.remove(interruption)
            throw error
        }
        Self.copyToStandardError(fd)
    }

    deinit { stop() }

    /// Stops the ledger (SIGTERM, then SIGKILL after 10 s). Returns its exit status, nil when it
    /// had to be killed or died of a signal.
    @discardableResult
    func stop() -> Int32? {
        let status = child.stop()
        Interruption.remove(interruption)
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

    /// Copies the rest of the log to our stderr on a thread of its own until the ledger exits;
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
