import Foundation

/// Runs the real `openssl` command-line tool, to check this module's output against it.
enum OpenSSLCommand {
    /// The exit status and the combined stdout and stderr of `openssl <arguments>`.
    struct Result {
        let status: Int32
        let output: String
    }

    static func run(_ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()  // Until openssl closes its end.
        process.waitUntilExit()
        return Result(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    /// The SHA-256 fingerprint openssl prints for the certificate at `path`, as uppercase hex.
    static func sha256Fingerprint(path: String) throws -> String {
        let result = try run(["x509", "-in", path, "-noout", "-fingerprint", "-sha256"])
        guard result.status == 0, let value = result.output.split(separator: "=").last else { return "" }
        return value.replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
