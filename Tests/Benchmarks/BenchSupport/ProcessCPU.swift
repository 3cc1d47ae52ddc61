import Foundation
import Glibc

/// CPU time (user + system, all threads) a process has used so far, from /proc/PID/stat.
public enum ProcessCPU {
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Seconds of CPU used by `pid` (0 means this process); nil when /proc cannot tell.
    public static func seconds(pid: Int32 = 0) -> Double? {
        let path = pid == 0 ? "/proc/self/stat" : "/proc/\(pid)/stat"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after "(comm)" start at field 3 (state); utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond
    }
}
