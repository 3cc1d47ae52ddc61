import Foundation

/// A process's memory as the kernel counts it, from /proc/PID/status.
public enum ProcessMemory {
    /// Resident set size now (`VmRSS`) and its peak so far (`VmHWM`), in bytes.
    public struct Resident {
        public var bytes: Int
        public var peakBytes: Int
    }

    /// The resident figures of `pid`; nil when /proc cannot tell (the process is gone).
    public static func resident(pid: Int32) -> Resident? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func kilobytes(_ field: String) -> Int? {
            for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
                // "VmRSS:\t  123456 kB"
                return line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap
                { Int($0) }
            }
            return nil
        }
        guard let rss = kilobytes("VmRSS"), let peak = kilobytes("VmHWM") else { return nil }
        return Resident(bytes: rss * 1024, peakBytes: peak * 1024)
    }
}
