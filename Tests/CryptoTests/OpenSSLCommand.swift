import Foundation
import ServiceProcessKit

/// Runs the real `openssl` command-line tool, to check this module's output against it.
enum OpenSSLCommand {
    /// The exit status and the combined stdout and stderr of `openssl <arguments>`.
    struct Result {
        let status: Int32
        let output: String
    }

    static func run(_ arguments: [String]) throws -> Result {
        let (status, output) = try SpawnedProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["openssl"] + arguments)
        return Result(status: status, output: output)
    }

    /// The SHA-256 fingerprint openssl prints for the certificate at `path`, as uppercase hex.
    static func sha256Fingerprint(path: String) throws -> String {
        let result = try run(["x509", "-in", path, "-noout", "-fingerprint", "-sha256"])
        guard result.status == 0, let value = result.output.split(separator: "=").last else { return "" }
        return value.replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
