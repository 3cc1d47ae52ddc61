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
        do throws(BenchError) {
            (child, port, _) = try ServiceLog.launch(executable, directory: directory, limit: limit)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
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
}
