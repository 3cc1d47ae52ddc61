import Config
import Foundation
import Observability
import ServiceRuntime
import Testing

@Suite("Clock file")
struct FileClockTests {
    /// A directory of its own with a clock file holding `milliseconds`.
    static func clockFile(_ milliseconds: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("clock").path
        try Data(milliseconds.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        return path
    }

    static func write(_ milliseconds: Int64, _ path: String) throws {
        try Data("\(milliseconds)\n".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    @Test("the wall time is the file's, runs on at the machine's pace, jumps with it and never goes back")
    func followsTheFile() throws {
        let path = try Self.clockFile("1767225600000\n")
        let machine = ManualClock(epochMilliseconds: 1_800_000_000_000)
        let clock = try FileClock(path: path, machine: machine)
        #expect(clock.epochMilliseconds() == 1_767_225_600_000)
        // Tokens and webhook timestamps stay on the machine's time.
        #expect(clock.machineEpochMilliseconds() == 1_800_000_000_000)
        machine.advance(by: .seconds(5))
        #expect(clock.epochMilliseconds() == 1_767_225_605_000)
        #expect(clock.nanoseconds() == machine.nanoseconds())
        // The simulator moves 31 days.
        try Self.write(1_767_225_600_000 + 31 * 86_400_000, path)
        #expect(clock.epochMilliseconds() == 1_769_904_000_000)
        machine.advance(by: .seconds(2))
        #expect(clock.epochMilliseconds() == 1_769_904_002_000)
        // A move by less than the time that ran meanwhile does not take the clock back.
        try Self.write(1_769_904_001_000, path)
        #expect(clock.epochMilliseconds() == 1_769_904_002_000)
        machine.advance(by: .seconds(1))
        #expect(clock.epochMilliseconds() == 1_769_904_003_000)
        // The file gone for a moment: the time runs on from the last one.
        try FileManager.default.removeItem(atPath: path)
        machine.advance(by: .seconds(1))
        #expect(clock.epochMilliseconds() == 1_769_904_004_000)
    }

    @Test("a service with CLOCK_FILE decides at the file's time; a file that cannot work stops the start")
    func hostSetting() throws {
        let path = try Self.clockFile("1767225600000")
        let settings = try HostSettings(
            environment: EnvironmentReader(["CLOCK_FILE": path]), defaultRPC: "127.0.0.1:0",
            defaultHTTP: "127.0.0.1:0")
        #expect(settings.clock?.epochMilliseconds() == 1_767_225_600_000)
        for (value, problem) in [
            ("/nonexistent/clock", "file /nonexistent/clock does not exist or cannot be read"),
            (try Self.clockFile("yesterday"), nil),
            (try Self.clockFile(""), nil),
        ] {
            #expect {
                _ = try HostSettings(
                    environment: EnvironmentReader(["CLOCK_FILE": value]), defaultRPC: "127.0.0.1:0",
                    defaultHTTP: "127.0.0.1:0")
            } throws: { error in
                guard let error = error as? ConfigError, error.variable == "CLOCK_FILE" else { return false }
                return error.problem
                    == (problem ?? "cannot read a time in epoch milliseconds (decimal digits) from \(value)")
            }
        }
    }
}
