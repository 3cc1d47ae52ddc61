import Config
import Sockets
import Testing

@Suite("Configuration")
struct EnvironmentReaderTests {
    @Test("unset and empty variables take the default")
    func defaults() throws {
        let env = EnvironmentReader(["EMPTY": ""])
        #expect(try env.int("MISSING", default: 7, range: 1...10) == 7)
        #expect(try env.int("EMPTY", default: 7, range: 1...10) == 7)
        #expect(try env.bool("MISSING", default: true))
        #expect(try env.duration("MISSING", default: .seconds(3), range: .zero...(.seconds(10))) == .seconds(3))
        #expect(try env.address("MISSING", default: "127.0.0.1:7002") == HostPort(host: "127.0.0.1", port: 7002))
    }

    @Test(
        "durations accept ms, s, m, h and bare milliseconds",
        arguments: [
            ("250ms", Duration.milliseconds(250)), ("30s", .seconds(30)), ("5m", .seconds(300)), ("1h", .seconds(3600)),
            ("40", .milliseconds(40)),
        ])
    func durations(text: String, expected: Duration) throws {
        #expect(
            try EnvironmentReader(["D": text]).duration("D", default: .zero, range: .zero...(.seconds(7200)))
                == expected)
    }

    @Test("addresses parse IPv4, names and bracketed IPv6; lists need at least one")
    func addresses() throws {
        #expect(HostPort(parsing: "[::1]:7000") == HostPort(host: "::1", port: 7000))
        #expect(HostPort(parsing: "ledger:7002")?.description == "ledger:7002")
        #expect(HostPort(parsing: "[::1]:7000")?.description == "[::1]:7000")
        #expect(HostPort(parsing: "ledger") == nil)
        #expect(HostPort(parsing: "ledger:70000") == nil)
        #expect(HostPort(parsing: ":80") == nil)
        let list = try EnvironmentReader(["L": "a:1, b:2"]).addresses("L", default: "")
        #expect(list == [HostPort(host: "a", port: 1), HostPort(host: "b", port: 2)])
    }

    @Test("bad values are refused with a message that names the variable and the problem")
    func errors() {
        let env = EnvironmentReader([
            "N": "x", "R": "99", "B": "maybe", "D": "-5s", "A": "host", "C": "mysql", "L": "a:1,b", "Z": "a:0",
        ])
        #expect(throws: ConfigError(variable: "N", problem: "expected an integer, got \"x\"")) {
            try env.int("N", default: 1, range: 1...10)
        }
        #expect(throws: ConfigError(variable: "R", problem: "99 is out of range 1...10")) {
            try env.int("R", default: 1, range: 1...10)
        }
        #expect(throws: ConfigError(variable: "B", problem: "expected true or false, got \"maybe\"")) {
            try env.bool("B", default: false)
        }
        #expect(
            throws: ConfigError(variable: "D", problem: "expected a duration such as 250ms, 30s, 5m or 1h, got \"-5s\"")
        ) {
            try env.duration("D", default: .zero, range: .zero...(.seconds(10)))
        }
        #expect(throws: ConfigError(variable: "A", problem: "expected host:port with a port 0...65535, got \"host\"")) {
            try env.address("A", default: "")
        }
        #expect(throws: ConfigError(variable: "C", problem: "expected one of sqlite, postgres, got \"mysql\"")) {
            try env.choice("C", default: "sqlite", choices: ["sqlite", "postgres"])
        }
        #expect(throws: ConfigError(variable: "L", problem: "expected host:port[,host:port...], got \"b\"")) {
            try env.addresses("L", default: "")
        }
        #expect(throws: ConfigError(variable: "Z", problem: "expected host:port[,host:port...], got \"a:0\"")) {
            try env.addresses("Z", default: "")
        }
    }

    @Test("a file setting must name a readable file")
    func files() throws {
        #expect(try EnvironmentReader([:]).readableFile("F") == nil)
        #expect(try EnvironmentReader(["F": "/etc/hostname"]).readableFile("F") == "/etc/hostname")
        #expect(throws: ConfigError(variable: "F", problem: "file /no/such/file does not exist or cannot be read")) {
            try EnvironmentReader(["F": "/no/such/file"]).readableFile("F")
        }
    }
}
