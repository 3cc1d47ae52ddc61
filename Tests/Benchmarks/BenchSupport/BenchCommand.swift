import Foundation
import Glibc

/// What a benchmark's command line parses into.
public protocol BenchCommandOptions {
    /// Parses the arguments (without the program name); throws for unknown or incomplete flags.
    init(arguments: [String]) throws(BenchError)
    var showHelp: Bool { get }
    static var helpText: String { get }
}

/// The frame every benchmark runs in: SIGPIPE ignored (a closed socket is an error from
/// write, not the end of the process), interruption cleanups installed, the options parsed
/// (a bad command line exits 2 with the reason), `--help` printed, then `run`. It exits 0 when
/// `run` reports no failed calls, 1 when calls failed or `run` threw.
public enum BenchCommand {
    public static func main<Options: BenchCommandOptions>(
        _: Options.Type, name: String, run: (Options) throws(BenchError) -> Int
    ) -> Never {
        signal(SIGPIPE, SIG_IGN)
        let options: Options
        do {
            options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
        } catch {
            note(name, "\(error)")
            exit(2)
        }
        if options.showHelp {
            print(Options.helpText)
            exit(0)
        }
        Interruption.install()
        do {
            exit(try run(options) == 0 ? 0 : 1)
        } catch {
            note(name, "\(error)")
            exit(1)
        }
    }

    /// Writes "`name`: `text`" to standard error (progress and warnings; the report goes to
    /// standard output).
    public static func note(_ name: String, _ text: String) {
        FileHandle.standardError.write(Data("\(name): \(text)\n".utf8))
    }

    /// Says so when the machine is already busy: other work moves every figure (both sides
    /// share its cores).
    public static func warnIfBusy(_ name: String) {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
            let load = text.split(separator: " ").first.flatMap({ Double($0) }), load > 0.5 * Double(cores)
        else { return }
        note(name, "load average \(load) on \(cores) cores before starting: other work will skew the figures")
    }

    /// Notes a service that did not exit cleanly on SIGTERM (`status` nil: killed by a signal).
    public static func noteUncleanExit(_ name: String, _ status: Int32?, of executable: String) {
        guard status != 0 else { return }
        note(
            name,
            "\(executable) did not exit cleanly on SIGTERM (\(status.map { "status \($0)" } ?? "killed by a signal"))")
    }
}

/// A benchmark's arguments, taken flag by flag. Each reader names the flag and what it wants
/// when the value is missing or out of range.
public struct BenchArguments {
    private var rest: ArraySlice<String>

    public init(_ arguments: [String]) { rest = arguments[...] }

    /// The next flag, or nil at the end.
    public mutating func nextFlag() -> String? { rest.popFirst() }

    /// The value after `flag`.
    public mutating func value(for flag: String) throws(BenchError) -> String {
        guard let value = rest.popFirst() else { throw BenchError("\(flag) needs a value") }
        return value
    }

    /// A whole number in `range` (underscores allowed: 1_000_000).
    public mutating func integer(for flag: String, in range: ClosedRange<Int>) throws(BenchError) -> Int {
        let text = try value(for: flag)
        guard let number = Int(text.filter { $0 != "_" }), range.contains(number) else {
            throw BenchError("\(flag) wants a whole number in \(range.lowerBound)…\(range.upperBound), not \"\(text)\"")
        }
        return number
    }

    /// A number in `range`, or above its lower bound with `excludingLower`; `unit` names what
    /// it counts in the refusal ("seconds").
    public mutating func number(
        for flag: String, in range: ClosedRange<Double>, excludingLower: Bool = false, unit: String? = nil
    ) throws(BenchError) -> Double {
        let text = try value(for: flag)
        guard let number = Double(text), range.contains(number), !(excludingLower && number == range.lowerBound) else {
            func bound(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }
            let interval = "\(excludingLower ? "(" : "[")\(bound(range.lowerBound)), \(bound(range.upperBound))]"
            throw BenchError("\(flag) wants a number\(unit.map { " of \($0)" } ?? "") in \(interval), not \"\(text)\"")
        }
        return number
    }
}
