import Config
import Sockets
import SubctlKit
import Testing

@Suite("subctl access: parsing")
struct AccessCommandTests {
    let local = HostPort(host: "127.0.0.1", port: 7003)
    var defaults: CallOptions { CallOptions(address: local, timeout: .seconds(5)) }

    @Test("access timeline: the account, a capability and the span as epoch milliseconds, dates or UTC times")
    func timeline() throws {
        #expect(
            try SubctlCommand.parse(["access", "timeline", "acct-1", "--addr", "127.0.0.1:7003"])
                == .access(.timeline(account: "acct-1", capability: nil, from: nil, to: nil), options: defaults))
        #expect(
            try SubctlCommand.parse([
                "access", "timeline", "acct-1", "--capability", "pro", "--from", "2026-01-31", "--to",
                "2026-03-01T12:30:05.250Z", "--addr", "127.0.0.1:7003",
            ])
                == .access(
                    .timeline(
                        account: "acct-1", capability: "pro", from: 1_769_817_600_000, to: 1_772_368_205_250),
                    options: defaults))
        #expect(
            try SubctlCommand.parse(["access", "timeline", "a", "--from", "5", "--to", "6", "--addr", "127.0.0.1:7003"])
                == .access(.timeline(account: "a", capability: nil, from: 5, to: 6), options: defaults))
    }

    @Test(
        "what access refuses, saying what is wrong",
        arguments: [
            (["access"], "access needs timeline"),
            (["access", "list"], "access needs timeline, got \"list\""),
            (["access", "timeline", "--addr", "127.0.0.1:7003"], "access timeline needs an ACCOUNT_ID"),
            (
                ["access", "timeline", "a", "--from", "2026-13-01", "--addr", "127.0.0.1:7003"],
                "--from expects epoch milliseconds, a date (2026-01-31) or a UTC time (2026-01-31T12:00:00Z), got \"2026-13-01\""
            ),
            (
                ["access", "timeline", "a", "--to", "2026-01-01T25:00:00Z", "--addr", "127.0.0.1:7003"],
                "--to expects epoch milliseconds, a date (2026-01-31) or a UTC time (2026-01-31T12:00:00Z), got \"2026-01-01T25:00:00Z\""
            ),
            (
                ["access", "timeline", "a", "--from", "6", "--to", "5", "--addr", "127.0.0.1:7003"],
                "--to must be after --from"
            ),
            (["access", "timeline", "a"], "access timeline needs --addr HOST:PORT"),
        ])
    func refused(_ arguments: [String], _ message: String) {
        #expect(throws: SubctlError(.usage, message)) { try SubctlCommand.parse(arguments) }
    }
}
