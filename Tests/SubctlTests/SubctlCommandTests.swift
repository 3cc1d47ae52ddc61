import Config
import Sockets
import SubctlKit
import Testing
import Wire

@Suite("SubctlCommand: parsing the command line")
struct SubctlCommandTests {
    let ledgerHealth = "subscriptions.ledger.v1.Ledger/Health"
    let verifierHealth = "subscriptions.verifier.v1.Verifier/Health"
    let entitlementHealth = "subscriptions.entitlement.v1.Entitlement/Health"
    let local = HostPort(host: "127.0.0.1", port: 7002)

    @Test func healthWithoutServiceTriesLedgerVerifierEntitlement() throws {
        #expect(
            try SubctlCommand.parse(["health", "--addr", "127.0.0.1:7002"])
                == .health(
                    candidates: [ledgerHealth, verifierHealth, entitlementHealth],
                    options: CallOptions(address: local, timeout: .seconds(5))))
    }

    @Test func healthWithServiceJSONTimeoutAndTLS() throws {
        let command = try SubctlCommand.parse([
            "health", "--service", "verifier", "--json", "--timeout=250ms", "--addr", "[::1]:7001",
            "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-ca", "ca.pem",
        ])
        #expect(
            command
                == .health(
                    candidates: [verifierHealth],
                    options: CallOptions(
                        address: HostPort(host: "::1", port: 7001), timeout: .milliseconds(250), json: true,
                        tls: .init(certificatePath: "c.pem", keyPath: "k.pem", caPath: "ca.pem"))))
        #expect(command.callOptions?.address.description == "[::1]:7001")
    }

    @Test func callResolvesTheMethodAndDefaultsTheRequest() throws {
        let method = try MessageCatalog.standard.method(named: "subscriptions.ledger.v1.Ledger/GetAccount")
        #expect(
            try SubctlCommand.parse(["call", "Ledger/GetAccount", "--addr", "127.0.0.1:7002"])
                == .call(
                    method: method, request: .json("{}"), options: CallOptions(address: local, timeout: .seconds(5))))
        #expect(
            try SubctlCommand.parse(["call", "GetAccount", #"{"accountId":"a"}"#, "--json", "--addr", "127.0.0.1:7002"])
                == .call(
                    method: method, request: .json(#"{"accountId":"a"}"#),
                    options: CallOptions(address: local, timeout: .seconds(5), json: true)))
        #expect(
            try SubctlCommand.parse(["call", "--addr", "127.0.0.1:7002", "GetAccount", "-", "--timeout", "2m"])
                == .call(
                    method: method, request: .standardInput,
                    options: CallOptions(address: local, timeout: .seconds(120))))
    }

    @Test func streamsHaveNoDefaultDeadline() throws {
        let method = try MessageCatalog.standard.method(named: "WatchChanges")
        #expect(
            try SubctlCommand.parse(["call", "WatchChanges", #"{"after":"10"}"#, "--addr", "127.0.0.1:7002"])
                == .call(
                    method: method, request: .json(#"{"after":"10"}"#),
                    options: CallOptions(address: local, timeout: nil)))
    }

    @Test func catalogCommandsAndHelp() throws {
        #expect(try SubctlCommand.parse(["methods"]) == .methods)
        #expect(try SubctlCommand.parse(["describe", "Subscription"]) == .describe("Subscription"))
        #expect(try SubctlCommand.parse(["help"]) == .help)
        #expect(try SubctlCommand.parse(["call", "--help"]) == .help)
        #expect(try SubctlCommand.parse(["-h"]) == .help)
        #expect(SubctlCommand.methods.callOptions == nil)
        #expect(SubctlCommand.usage.hasPrefix("usage: subctl COMMAND [options]\n"))
    }

    @Test(arguments: [
        (
            [],
            "USAGE: missing command (health, call, methods, describe, account, history, inbox, replay, trace, events, access, apple, google, import, find or console)"
        ),
        (
            ["status"],
            #"USAGE: unknown command "status" (health, call, methods, describe, account, history, inbox, replay, "#
                + "trace, events, access, apple, google, import, find or console)"
        ),
        (["health"], "USAGE: health needs --addr HOST:PORT"),
        (["health", "--addr"], "USAGE: --addr needs a value"),
        (
            ["health", "--addr", "localhost"],
            #"USAGE: --addr expects HOST:PORT with a port 1...65535, got "localhost""#
        ),
        (["health", "--addr", "h:0"], #"USAGE: --addr expects HOST:PORT with a port 1...65535, got "h:0""#),
        (
            ["health", "--addr", "h:1", "--service", "billing"],
            #"USAGE: --service expects verifier, ledger or entitlement, got "billing""#
        ),
        (["health", "--addr", "h:1", "--verbose"], "USAGE: unknown option --verbose for health"),
        (["health", "--addr", "h:1", "-v"], "USAGE: unknown option -v for health"),
        (["health", "--addr", "h:1", "--addr", "h:2"], "USAGE: --addr is given twice"),
        (["health", "--addr", "h:1", "--json=yes"], "USAGE: --json takes no value"),
        (["health", "--addr", "h:1", "extra"], #"USAGE: unexpected argument "extra" for health"#),
        (
            ["health", "--addr", "h:1", "--timeout", "5"],
            #"USAGE: --timeout expects a duration such as 500ms, 5s or 1m, got "5""#
        ),
        (
            ["health", "--addr", "h:1", "--timeout", "0s"],
            #"USAGE: --timeout expects a duration such as 500ms, 5s or 1m, got "0s""#
        ),
        (
            ["health", "--addr", "h:1", "--tls-cert", "c.pem"],
            "USAGE: mutual TLS needs --tls-cert, --tls-key and --tls-ca together"
        ),
        (["call", "--addr", "h:1"], "USAGE: call needs a METHOD"),
        (["call", "GetAccount", "{}", "{}", "--addr", "h:1"], #"USAGE: unexpected argument "{}" for call"#),
        (["call", "GetAccount", "--service", "ledger", "--addr", "h:1"], "USAGE: unknown option --service for call"),
        (["call", "NoSuchMethod", "--addr", "h:1"], "NOT_FOUND: no method NoSuchMethod (subctl methods lists them)"),
        (["methods", "--json"], "USAGE: unknown option --json for methods"),
        (["methods", "x"], #"USAGE: unexpected argument "x" for methods"#),
        (["describe"], "USAGE: describe needs a NAME"),
    ])
    func badCommandLines(arguments: [String], expected: String) {
        let error = #expect(throws: SubctlError.self) { try SubctlCommand.parse(arguments) }
        #expect(error?.description == expected)
    }

    @Test func usageErrorsExitWithTwo() {
        #expect(SubctlError(.usage, "x").code.exitCode == 2)
        #expect(SubctlError(.rpc(.unavailable), "x").code.exitCode == 1)
        #expect(SubctlError(.dataLoss, "x").code.exitCode == 1)
    }
}
