import Foundation

/// Bytes a process has caused to be read from storage so far (`read_bytes` of /proc/PID/io:
/// what the page cache did not already hold).
enum ProcessReads {
    /// nil when /proc cannot tell (no such process, or the kernel keeps no I/O accounting).
    static func bytes(pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("read_bytes:") {
            return Int(line.dropFirst("read_bytes:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
