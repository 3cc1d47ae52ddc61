import Config
import Model
import Sockets
import SubctlKit
import Testing
import Wire

@Suite("SubctlCommand: parsing the ledger commands")
struct LedgerCommandParsingTests {
    let local = HostPort(host: "127.0.0.1", port: 7002)
    var defaults: CallOptions { CallOptions(address: local, timeout: .seconds(5)) }

    @Test func account() throws {
        #expect(
            try SubctlCommand.parse(["account", "acct-1", "--addr", "127.0.0.1:7002"])
                == .ledger(.account("acct-1"), options: defaults))
        #expect(
            try SubctlCommand.parse(["account", "--json", "--addr=127.0.0.1:7002", "--timeout", "1s", "--", "-odd"])
                == .ledger(.account("-odd"), options: CallOptions(address: local, timeout: .seconds(1), json: true)))
    }

    @Test func history() throws {
        #expect(
            try SubctlCommand.parse(["history", "--account", "acct-1", "--addr", "127.0.0.1:7002"])
                == .ledger(.history(.account("acct-1"), pageSize: 0, all: false), options: defaults))
        let key = SubscriptionKey(store: .google, environment: .sandbox, storeID: "tok.9-x_Y")
        #expect(
            try SubctlCommand.parse([
                "history", "--key", "google/sandbox/tok.9-x_Y", "--page-size", "500", "--all", "--json", "--addr",
                "127.0.0.1:7002",
            ])
                == .ledger(
                    .history(.key(key), pageSize: 500, all: true),
                    options: CallOptions(address: local, timeout: .seconds(5), json: true)))
        #expect(
            try SubctlCommand.parse(["history", "--key=apple/production/2000000123", "--addr", "127.0.0.1:7002"])
                == .ledger(
                    .history(
                        .key(SubscriptionKey(store: .apple, environment: .production, storeID: "2000000123")),
                        pageSize: 0, all: false),
                    options: defaults))
    }

    @Test func inbox() throws {
        #expect(
            try SubctlCommand.parse(["inbox", "--addr", "127.0.0.1:7002"])
                == .ledger(.inbox(status: nil, store: nil, pageSize: 0), options: defaults))
        #expect(
            try SubctlCommand.parse([
                "inbox", "--status", "failed", "--store", "google", "--page-size", "1", "--addr", "127.0.0.1:7002",
            ]) == .ledger(.inbox(status: .failed, store: .google, pageSize: 1), options: defaults))
        #expect(
            try SubctlCommand.parse(["inbox", "--status=processed", "--store=apple", "--addr", "127.0.0.1:7002"])
                == .ledger(.inbox(status: .processed, store: .apple, pageSize: 0), options: defaults))
        #expect(
            try SubctlCommand.parse(["inbox", "--status", "pending", "--addr", "127.0.0.1:7002"])
                == .ledger(.inbox(status: .pending, store: nil, pageSize: 0), options: defaults))
    }

    @Test func replay() throws {
        #expect(
            try SubctlCommand.parse(["replay", "apple", "6a1f0b2c", "--addr", "127.0.0.1:7002"])
                == .ledger(.replay(.apple, notificationID: "6a1f0b2c"), options: defaults))
        #expect(
            try SubctlCommand.parse(["replay", "--json", "--addr", "127.0.0.1:7002", "google", "1234567890"])
                == .ledger(
                    .replay(.google, notificationID: "1234567890"),
                    options: CallOptions(address: local, timeout: .seconds(5), json: true)))
        #expect(
            try SubctlCommand.parse(["replay", "apple", "6a1f0b2c", "--reason", "ticket 9", "--addr", "127.0.0.1:7002"])
                == .ledger(.replay(.apple, notificationID: "6a1f0b2c", reason: "ticket 9"), options: defaults))
    }

    @Test func eachCommandCallsTheLedgerMethodOfItsTypedMessages() throws {
        let commands: [(LedgerCommand, String, String)] = [
            (.account("a"), GetAccountRequest.protoName, GetAccountResponse.protoName),
            (
                .history(.account("a"), pageSize: 0, all: false), GetHistoryRequest.protoName,
                GetHistoryResponse.protoName
            ),
            (.inbox(status: nil, store: nil, pageSize: 0), ListInboxRequest.protoName, ListInboxResponse.protoName),
            (.replay(.apple, notificationID: "n"), ReplayInboxRequest.protoName, MarkInboxResponse.protoName),
        ]
        for (command, input, output) in commands {
            let method = try MessageCatalog.standard.method(named: command.method)
            #expect(method.fullName == command.method)
            #expect(method.serviceFullName == "subscriptions.ledger.v1.Ledger")
            #expect(method.inputType == input)
            #expect(method.outputType == output)
            #expect(!method.isServerStreaming)
        }
    }

    @Test(arguments: [
        (["account"], "USAGE: account needs an ACCOUNT_ID"),
        (["account", "", "--addr", "h:1"], "USAGE: account needs an ACCOUNT_ID"),
        (["account", "a", "b", "--addr", "h:1"], #"USAGE: unexpected argument "b" for account"#),
        (["account", "a"], "USAGE: account needs --addr HOST:PORT"),
        (["account", "a", "--all", "--addr", "h:1"], "USAGE: unknown option --all for account"),
        (["history", "--addr", "h:1"], "USAGE: history needs --account ACCOUNT_ID or --key STORE/ENV/STORE_ID"),
        (
            ["history", "--account", "", "--addr", "h:1"],
            "USAGE: history needs --account ACCOUNT_ID or --key STORE/ENV/STORE_ID"
        ),
        (
            ["history", "--account", "a", "--key", "apple/production/1", "--addr", "h:1"],
            "USAGE: history takes --account or --key, not both"
        ),
        (["history", "--account", "a"], "USAGE: history needs --addr HOST:PORT"),
        (["history", "--account", "a", "--all=yes", "--addr", "h:1"], "USAGE: --all takes no value"),
        (["history", "--account", "a", "x", "--addr", "h:1"], #"USAGE: unexpected argument "x" for history"#),
        (
            ["history", "--key", "amazon/production/1", "--addr", "h:1"],
            #"USAGE: the STORE of --key expects apple or google, got "amazon""#
        ),
        (
            ["history", "--key", "Apple/production/1", "--addr", "h:1"],
            #"USAGE: the STORE of --key expects apple or google, got "Apple""#
        ),
        (
            ["history", "--key", "apple/prod/1", "--addr", "h:1"],
            #"USAGE: the ENV of --key expects production or sandbox, got "prod""#
        ),
        (
            ["history", "--key", "apple/production", "--addr", "h:1"],
            #"USAGE: --key expects STORE/ENV/STORE_ID such as apple/production/2000001, got "apple/production""#
        ),
        (
            ["history", "--key", "apple/production/", "--addr", "h:1"],
            #"USAGE: --key expects STORE/ENV/STORE_ID such as apple/production/2000001, got "apple/production/""#
        ),
        (
            ["history", "--key", "apple/production/1/2", "--addr", "h:1"],
            #"USAGE: --key expects STORE/ENV/STORE_ID such as apple/production/2000001, got "apple/production/1/2""#
        ),
        (
            ["history", "--account", "a", "--page-size", "0", "--addr", "h:1"],
            #"USAGE: --page-size expects a number 1...500, got "0""#
        ),
        (
            ["history", "--account", "a", "--page-size", "501", "--addr", "h:1"],
            #"USAGE: --page-size expects a number 1...500, got "501""#
        ),
        (
            ["history", "--account", "a", "--page-size", "ten", "--addr", "h:1"],
            #"USAGE: --page-size expects a number 1...500, got "ten""#
        ),
        (
            ["inbox", "--status", "done", "--addr", "h:1"],
            #"USAGE: --status expects pending, failed, processed or rejected, got "done""#
        ),
        (["inbox", "--store", "amazon", "--addr", "h:1"], #"USAGE: --store expects apple or google, got "amazon""#),
        (["inbox", "--all", "--addr", "h:1"], "USAGE: unknown option --all for inbox"),
        (["inbox", "pending", "--addr", "h:1"], #"USAGE: unexpected argument "pending" for inbox"#),
        (["inbox"], "USAGE: inbox needs --addr HOST:PORT"),
        (["replay", "--addr", "h:1"], "USAGE: replay needs STORE and NOTIFICATION_ID"),
        (["replay", "apple", "--addr", "h:1"], "USAGE: replay needs STORE and NOTIFICATION_ID"),
        (["replay", "apple", "", "--addr", "h:1"], "USAGE: replay needs STORE and NOTIFICATION_ID"),
        (["replay", "amazon", "n", "--addr", "h:1"], #"USAGE: STORE expects apple or google, got "amazon""#),
        (["replay", "apple", "n", "x", "--addr", "h:1"], #"USAGE: unexpected argument "x" for replay"#),
        (["replay", "apple", "n", "--all", "--addr", "h:1"], "USAGE: unknown option --all for replay"),
        (["replay", "apple", "n"], "USAGE: replay needs --addr HOST:PORT"),
    ])
    func badLedgerCommandLines(arguments: [String], expected: String) {
        let error = #expect(throws: SubctlError.self) { try SubctlCommand.parse(arguments) }
        #expect(error?.description == expected)
        #expect(error?.code.exitCode == 2)
    }

    @Test func usageNamesTheLedgerCommands() {
        for line in [
            "  account ACCOUNT_ID --addr HOST:PORT",
            "  history (--account ACCOUNT_ID | --key KEY) --addr HOST:PORT [--page-size N] [--all]",
            "  inbox [--status pending|failed|processed|rejected] [--store apple|google] --addr HOST:PORT",
            "  replay STORE NOTIFICATION_ID [--reason TEXT] --addr HOST:PORT",
            "KEY is STORE/ENV/STORE_ID: STORE apple or google, ENV production or sandbox, STORE_ID the",
        ] {
            #expect(SubctlCommand.usage.split(separator: "\n").contains { $0 == line }, "\(line)")
        }
    }
}
