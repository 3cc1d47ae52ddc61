import Foundation
import Synchronization

/// Writes one JSON object per line to standard error: `ts`, `level`, `service`, `msg`, then
/// the event's own fields, and `trace_id` when the line is written while serving a call
/// (`TraceContext.current`) unless the fields name one. Safe to share between threads; a line is written with one `write`.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        /// Parses `debug`, `info`, `warning` or `error`.
        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
            self = level
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The field that names the trace of the call a line was written for.
    public static let traceIDField = "trace_id"

    public let service: String
    public let minimumLevel: Level
    private let sink: LogSink

    /// A logger for `service` that drops events below `minimumLevel`. `sink` defaults to stderr.
    /// Stamps each line with `clock`'s wall time.
    public let clock: any ServiceClock

    public init(
        service: String, minimumLevel: Level = .info, sink: LogSink = .standardError,
        clock: any ServiceClock = SystemClock()
    ) {
        self.clock = clock
        self.service = service
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    public func debug(_ message: String, _ fields: [String: String] = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: String] = [:]) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: String] = [:]) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: String] = [:]) { log(.error, message, fields) }

    /// Writes one event when `level` is at or above the minimum.
    public func log(_ level: Level, _ message: String, _ fields: [String: String]) {
        guard level >= minimumLevel else { return }
        var line = "{\"ts\":\""
        line += Self.timestamp(clock.epochMilliseconds())
        line += "\",\"level\":\"\(level.name)\",\"service\":"
        JSONText.appendString(service, to: &line)
        line += ",\"msg\":"
        JSONText.appendString(message, to: &line)
        var fields = fields
        if fields[Self.traceIDField] == nil, let trace = TraceContext.current {
            fields[Self.traceIDField] = trace.traceID
        }
        for key in fields.keys.sorted() {
            line += ","
            JSONText.appendString(key, to: &line)
            line += ":"
            JSONText.appendString(fields[key]!, to: &line)
        }
        line += "}\n"
        sink.write(line)
    }

    private static func timestamp(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int(milliseconds % 1000)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }
}

/// Where log lines go: standard error, or a buffer tests can read.
public final class LogSink: Sendable {
    private let lines = Mutex<[String]>([])
    private let isCapturing: Bool

    private init(capturing: Bool) { isCapturing = capturing }

    /// Lines go to file descriptor 2.
    public static let standardError = LogSink(capturing: false)

    /// Lines are kept in memory; read them with `captured`.
    public static func capturing() -> LogSink { LogSink(capturing: true) }

    /// The lines written so far, when capturing.
    public var captured: [String] { lines.withLock { $0 } }

    func write(_ line: String) {
        if isCapturing {
            lines.withLock { $0.append(line) }
            return
        }
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Foundation.write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }
}

/// JSON string escaping shared by the logger and the metrics text.
public enum JSONText {
    /// Appends `value` as a quoted JSON string.
    public static func appendString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
