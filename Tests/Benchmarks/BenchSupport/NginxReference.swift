import Foundation
import Glibc

/// Debian's nginx on a free loopback port, answering every request with one static file: the
/// reference a web server sets for CheckAccess over HTTP. Its configuration, the file and its
/// logs live in a directory of their own under the benchmark's; `stop()` (also on deinit) ends it.
///
/// The file is served for `POST` as for `GET` (nginx's static module answers a `POST` 405, which
/// `error_page 405 =200` turns into the file), with `Content-Type: application/json`, keep-alive,
/// no access log, one worker per core.
public final class NginxReference {
    public let port: Int
    public let child: ChildProcess
    private let directory: String

    /// Starts nginx serving `body` and waits until it answers. Throws when nginx is missing or
    /// does not answer within 5 s.
    public init(serving body: [UInt8], in parent: TemporaryDirectory) throws(BenchError) {
        directory = parent.file("nginx")
        let root = directory + "/www"
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try Data(body).write(to: URL(fileURLWithPath: root + "/answer.json"))
        } catch {
            throw BenchError("cannot write nginx's files in \(directory): \(error)")
        }
        port = try LoopbackAddress.freePort()
        // As root, nginx would hand its workers to `nobody`, who cannot read the temporary directory.
        let user = getuid() == 0 ? "user root;\n" : ""
        let configuration = """
            \(user)worker_processes auto;
            daemon off;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 1024; }
            http {
              access_log off;
              client_body_temp_path \(directory)/body;
              proxy_temp_path \(directory)/proxy;
              fastcgi_temp_path \(directory)/fastcgi;
              uwsgi_temp_path \(directory)/uwsgi;
              scgi_temp_path \(directory)/scgi;
              keepalive_requests 1000000;
              server {
                listen 127.0.0.1:\(port);
                root \(root);
                default_type application/json;
                location / {
                  try_files /answer.json =404;
                  error_page 405 =200 /answer.json;
                }
              }
            }
            """
        let configurationPath = directory + "/nginx.conf"
        do {
            try configuration.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(configurationPath): \(error)")
        }
        let executable = ChildProcess.resolve("nginx") ?? "/usr/sbin/nginx"
        child = try ChildProcess(
            name: "nginx", executable: executable, arguments: ["-p", directory, "-c", configurationPath],
            directory: directory)
        let deadline = MonotonicTime.nanoseconds() + 5_000_000_000
        while (try? ChildProcess.runToCompletion(
            "curl", ["-sf", "-o", "/dev/null", "-X", "POST", "http://127.0.0.1:\(port)/"], limit: .seconds(2)))?.status
            != 0
        {
            guard child.isRunning, MonotonicTime.nanoseconds() < deadline else {
                let log = (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? ""
                child.stop()
                throw BenchError("nginx did not answer on port \(port) within 5 s: \(log)")
            }
            usleep(20_000)
        }
    }

    deinit { stop() }

    /// Stops nginx (SIGTERM, then SIGKILL); idempotent.
    public func stop() { child.stop() }

    /// CPU seconds nginx has used so far: its master's and each worker's (the master's children).
    public func cpuSeconds() -> Double {
        let pid = child.pid
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        let workers = children.split(separator: " ").compactMap { Int32($0) }
        return ([pid] + workers).reduce(0) { $0 + (ProcessCPU.seconds(pid: $1) ?? 0) }
    }
}
