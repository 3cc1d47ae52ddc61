import Config
import Foundation
import Observability
import ServiceRuntime
import Testing

@Suite("Clock file")
struct FileClockTests {
    /// A directory of its own with a clock file holding `text`.
    static func clockFile(_ text: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("clock").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        return path
    }

    static func write(_ time: Int64, at machine: Int64, _ path: String) throws {
        try Data("\(time) \(machine)\n".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    static let machineStart: Int64 = 1_800_000_000_000

    @Test("the wall time is the file's, runs on at the machine's pace, jumps with it and never goes back")
    func followsTheFile() throws {
        let path = try Self.clockFile("1767225600000 \(Self.machineStart)\n")
        let machine = ManualClock(epochMilliseconds: Self.machineStart)
        let clock = try FileClock(path: path, machine: machine)
        #expect(clock.epochMilliseconds() == 1_767_225_600_000)
        // Tokens and webhook timestamps stay on the machine's time.
        #expect(clock.machineEpochMilliseconds() == Self.machineStart)
        machine.advance(by: .seconds(5))
        #expect(clock.epochMilliseconds() == 1_767_225_605_000)
        #expect(clock.nanoseconds() == machine.nanoseconds())
        // A second reader started later computes the same time.
        #expect(try FileClock(path: path, machine: machine).epochMilliseconds() == 1_767_225_605_000)
        // The simulator moves 31 days.
        try Self.write(1_767_225_605_000 + 31 * 86_400_000, at: Self.machineStart + 5000, path)
        #expect(clock.epochMilliseconds() == 1_769_904_005_000)
        machine.advance(by: .seconds(2))
        #expect(clock.epochMilliseconds() == 1_769_904_007_000)
        // A move to a time already passed does not take the clock back.
        try Self.write(1_769_904_006_000, at: Self.machineStart + 7000, path)
        #expect(clock.epochMilliseconds() == 1_769_904_007_000)
        machine.advance(by: .seconds(2))
        #expect(clock.epochMilliseconds() == 1_769_904_008_000)
        // The file gone for a moment: the time runs on from the last pair.
        try FileManager.default.removeItem(atPath: path)
        machine.advance(by: .seconds(1))
        #expect(clock.epochMilliseconds() == 1_769_904_009_000)
    }

    @Test("a service with CLOCK_FILE decides at the file's time; a file that cannot work stops the start")
    func hostSetting() throws {
        let path = try Self.clockFile("1767225600000 \(Int64(Date().timeIntervalSince1970 * 1000) + 60_000)")
        let settings = try HostSettings(
            environment: EnvironmentReader(["CLOCK_FILE": path]), defaultRPC: "127.0.0.1:0",
            defaultHTTP: "127.0.0.1:0")
        // Written for a minute from now: the time has not run on yet.
        #expect(settings.clock?.epochMilliseconds() == 1_767_225_600_000)
        for (value, problem) in [
            ("/nonexistent/clock", "file /nonexistent/clock does not exist or cannot be read"),
            (try Self.clockFile("1767225600000"), nil),
            (try Self.clockFile("yesterday 1800000000000"), nil),
            (try Self.clockFile("1767225600000  1800000000000"), nil),
            (try Self.clockFile(""), nil),
        ] {
            #expect {
                _ = try HostSettings(
                    environment: EnvironmentReader(["CLOCK_FILE": value]), defaultRPC: "127.0.0.1:0",
                    defaultHTTP: "127.0.0.1:0")
            } throws: { error in
                guard let error = error as? ConfigError, error.variable == "CLOCK_FILE" else { return false }
                return error.problem
                    == (problem
                        ?? "\(value) does not hold a time and the machine's time when it was written, two numbers of "
                        + "epoch milliseconds (as storesim writes STORESIM_DIR/clock)")
            }
        }
    }
}
