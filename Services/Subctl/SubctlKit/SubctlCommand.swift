import Config
import Sockets

/// One parsed `subctl` command line. Parsing does no I/O: `-` as the request stays a request
/// to read standard input, and TLS, JWS and trust anchor files are not opened.
public enum SubctlCommand: Sendable, Equatable {
    /// Where a call's request JSON comes from.
    public enum RequestSource: Sendable, Equatable {
        case json(String)
        case standardInput
    }

    /// Call the first of `candidates` (full method names) that is not UNIMPLEMENTED and print
    /// the service's health.
    case health(candidates: [String], options: CallOptions)
    /// Call `method` with the request JSON and print the answer (each message of a stream).
    case call(method: CatalogMethod, request: RequestSource, options: CallOptions)
    /// List every method.
    case methods
    /// Describe a message, enum or method by name.
    case describe(String)
    /// Ask the ledger about an account, a history or the inbox, or replay an inbox entry.
    case ledger(LedgerCommand, options: CallOptions)
    /// Ask the entitlement service about an account's access.
    case access(AccessCommand, options: CallOptions)
    /// Check App Store signed data offline.
    case apple(AppleCommand)
    /// Act at Google Play through the verifier: revoke, refund, defer, cancel.
    case google(GoogleCommand, options: CallOptions)
    /// `apple extend|extend-status|set-token|refunds|consumption`: an App Store operation through the verifier.
    case appleOperation(AppleOperation, options: CallOptions)
    /// `import FILE`: restore the subscriptions an import file names through the verifier.
    case importFile(ImportOptions)
    /// `find VALUE`: what a value a customer quotes names, through the verifier.
    case find(FindCommand, options: CallOptions)
    /// `console --listen HOST:PORT`: the support console, served on this machine until stopped.
    case console(ConsoleOptions)
    /// Print `usage`.
    case help

    /// The connection a command needs; nil for those that print from the catalog only.
    public var callOptions: CallOptions? {
        switch self {
        case .health(_, let options), .call(_, _, let options), .ledger(_, let options), .access(_, let options),
            .google(_, let options), .appleOperation(_, let options), .find(_, let options):
            options
        case .importFile(let options): options.dryRun ? nil : options.call
        // The console connects to three services itself.
        case .methods, .describe, .apple, .help, .console: nil
        }
    }

    /// The help text.
    public static let usage = """
        usage: subctl COMMAND [options]

        commands:
          health --addr HOST:PORT [--service verifier|ledger|entitlement]
                      Ask a service how it is. Without --service, tries the ledger, verifier and
                      entitlement Health methods in turn and reports the first that answers.
          call METHOD [JSON|-] --addr HOST:PORT
                      Call any method with a request given as proto3 JSON ({} when omitted, - reads
                      standard input). A server stream prints each message as it arrives.
          methods     List every method with its request and response messages.
          describe NAME
                      List a message's fields, an enum's values, or a method's request and response.

        ledger commands (--addr is the ledger's):
          account ACCOUNT_ID --addr HOST:PORT
                      An account's subscriptions and links.
          history (--account ACCOUNT_ID | --key KEY) --addr HOST:PORT [--page-size N] [--all]
                      The audit trail of an account or a subscription, newest first. --all reads
                      every page (at most 100).
          inbox [--status pending|failed|processed|rejected] [--store apple|google] --addr HOST:PORT
                [--page-size N]
                      The store notification inbox; pending and failed entries without --status.
          replay STORE NOTIFICATION_ID [--reason TEXT] --addr HOST:PORT
                      Put an inbox entry back to pending, for the verifier's next reconciliation
                      pass, and print it; with --reason, in your name in the audit trail of its
                      subscription.
          trace TRACE_ID --addr HOST:PORT
                      What the ledger kept under one trace id (the 32 hex digits of a
                      traceparent, the trace_id of a log line or event): the inbox entries its
                      calls received and the events they recorded, in order.
          events list [--after SEQUENCE] [--limit N] [--types T,...] --addr HOST:PORT
                      A page of the event log after a sequence (N 1...1000), of some types
                      (names or prefix.*).
          events tail [--after SEQUENCE] [--types T,...] [--count N] --addr HOST:PORT
                      Print events as they are logged (from the newest, or after SEQUENCE);
                      --count stops after N.
          events dead [--endpoint NAME] [--limit N] [--all] --addr HOST:PORT
                      Webhook events given up on, by endpoint and sequence (N a page, 1...500;
                      --all reads every page).
          events test [--account ACCOUNT_ID] --addr HOST:PORT
                      Log a test event, which every endpoint that takes `test` receives.
          events replay --endpoint NAME --from SEQUENCE | --sequence SEQUENCE [--reason TEXT]
                --addr HOST:PORT
                      Deliver an endpoint's events after SEQUENCE again (its dead letters too),
                      or only its dead letter SEQUENCE, and enable it if a 410 disabled it; with
                      --reason, a dead letter's redelivery is in your name in the audit trail of
                      its event's account.
          events verify [--from POSITION] --addr HOST:PORT
                      Check that the log holds the lifecycle events of each change of the feed
                      after POSITION (default: where the log began), up to where event
                      computation has reached, exactly once; print each missing, doubled or
                      unexpected one (exit status 3).

        entitlement commands (--addr is the entitlement service's):
          access timeline ACCOUNT_ID [--capability NAME] [--from TIME] [--to TIME] --addr HOST:PORT
                      The account's access per capability as a table of intervals: paid, trial,
                      offer, grace, billing_retry, account_hold, paused, revoked, granted (by
                      support) or gap, each with the subscription and the period or status
                      interval it rests on. TIME is epoch milliseconds, 2026-01-31 or
                      2026-01-31T12:00:00Z; by default a year before now to 31 days after.

        App Store signed data (offline; no --addr):
          apple verify (JWS | - | --file PATH) --root PATH [--root PATH...] --bundle BUNDLE_ID
                --env Sandbox|Production|Xcode|LocalTesting [--app-id N]
                [--kind notification|transaction|renewal]
                      Verify a JWS: a notification's signedPayload, a signedTransactionInfo or a
                      signedRenewalInfo (- reads standard input). --root names a trust anchor,
                      DER (.cer) or PEM (Apple Root CA - G3 for real data); --app-id is the app's
                      Apple id, required with Production. Without --kind the kind is read from
                      the unverified payload. Prints the payload as JSON with the signed
                      transaction, renewal and app transaction inside a notification decoded in
                      place (each verified too, its verdict on a line of its own), then `valid`
                      or `invalid: CODE: reason`. Decoded payloads are shown even when invalid:
                      only the verdict says whether to trust them.

        support operations at Google Play (--addr is the verifier's; each needs --reason TEXT,
        recorded in the ledger's audit trail with the caller):
          google revoke TOKEN --package PKG --refund full|prorated --reason TEXT --addr HOST:PORT
                      End a subscription's access now with a full or prorated refund.
          google refund ORDER_ID --token TOKEN --package PKG [--revoke] --reason TEXT --addr HOST:PORT
                      Refund one order (a renewal's GPA.…..N: that order only) of the purchase
                      TOKEN; --revoke ends access too.
          google defer TOKEN --package PKG --product ID (--days N | --until TIME) --reason TEXT
                --addr HOST:PORT
                      Move the next renewal N days (1...365) later, or to TIME.
          google cancel TOKEN --package PKG --reason TEXT --addr HOST:PORT
                      Turn renewal off; access stays to the period's end.
                      Each prints what Play answered and the subscription as recorded after it.

        App Store operations (--addr is the verifier's; each is kept in the subscription's audit
        trail with the caller and --reason; --env production|sandbox, default the verifier's):
          apple extend ORIGINAL_TRANSACTION_ID --days N [--reason-code 0-3] [--request-id UUID]
                --reason TEXT --addr HOST:PORT
                      Extend a subscription's renewal date by N days (1...90; Apple allows two
                      extensions in 365 days). --reason-code is Apple's extendReasonCode (0
                      undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage).
                      Without --request-id a new one is made and printed: run again with it to
                      retry without extending twice.
          apple extend --all --product ID [--storefront USA,CAN] --days N [--reason-code 0-3]
                [--request-id UUID] [--no-wait] [--every SECONDS] --reason TEXT --addr HOST:PORT
                      Extend every eligible subscriber of the product (in those storefronts),
                      which Apple does over time: prints the request id, then its progress every
                      SECONDS (default 10) until Apple has finished, unless --no-wait.
          apple extend-status --product ID --request-id UUID --addr HOST:PORT
                      How far a mass extension has come.
          apple consumption TRANSACTION_ID --consented --delivery STATUS [--sample]
                [--percentage N] [--refund-preference DECLINE|GRANT_FULL|GRANT_PRORATED]
                --reason TEXT --addr HOST:PORT
                      Answer Apple's CONSUMPTION_REQUEST (within 12 hours), only with the
                      customer's consent. STATUS is Apple's deliveryStatus (DELIVERED, …); N is
                      milliunits consumed, not for an auto-renewable subscription.
          apple set-token ORIGINAL_TRANSACTION_ID --account ACCOUNT_ID --reason TEXT --addr HOST:PORT
                      Set the purchase's appAccountToken to the account's and link it to the account.
          apple refunds TRANSACTION_ID --reason TEXT --addr HOST:PORT
                      The customer's refunded purchases, each marked recorded-before yes or no
                      (the ones the ledger did not know are recorded now).

        importing subscribers (--addr is the verifier's):
          import FILE --addr HOST:PORT [--rate N] [--concurrency N] [--dry-run] [--progress FILE]
                [--report-json FILE] [--account-from original|last-seen] [--reason TEXT]
                      Restore each distinct subscription FILE names (a RevenueCat Transactions
                      export, or CSV or JSON lines of account_id, store apple|google, environment,
                      transaction_id, or purchase_token, package_name and product_id) for its
                      account, at most N a second (default 10) with up to --concurrency calls in
                      flight (default 8, 1 to 64), waiting out the stores' rate limits. Each outcome is kept in the progress file (FILE.progress by
                      default), so running the same command again after a stop goes on where it
                      ended without asking the store twice. Ends with a report (--report-json
                      writes it as JSON too); --dry-run reads and counts only.

        support (--addr is the verifier's):
          find VALUE [--reason TEXT] [--entitlement HOST:PORT] --addr HOST:PORT
                      What a value a customer quotes names: an account id, an App Store
                      transaction, original transaction or order id (the receipt's), a Google Play
                      purchase token or order id (GPA.…, a renewal's ..N too). Prints what it was
                      taken as, the accounts, each subscription with its periods and status
                      intervals, the purchases of an App Store order the ledger has not recorded
                      (to restore), and the newest 20 events; with --entitlement (the entitlement
                      service's address) each account's access per capability now. --reason goes
                      to the verifier's log.
          console --listen HOST:PORT [--ledger HOST:PORT] [--verifier HOST:PORT]
                [--entitlement HOST:PORT] [--tls-cert FILE --tls-key FILE --tls-ca FILE]
                [--apple-root PEM]... [--no-login] [--origin URL] [--timeout D]
                      The support console: web pages on this machine (port 0 picks a free port)
                      that find customers, show their subscriptions, access over time and audit
                      trail, and take the support actions, each call made to the services
                      (default 127.0.0.1:7002, :7001 and :7003) with this certificate, so under
                      your identity and the services' allow rules; a read-only identity sees
                      redacted data and no actions. Prints `console ready at URL` once serving;
                      open that URL (it carries a login token made for this start). --apple-root
                      (repeatable) names the App Store roots raw payloads are verified against;
                      --no-login serves every visitor (behind your own authenticating proxy);
                      --origin names the address that proxy serves it under (https://HOST).
                      Stops on Ctrl-C or SIGTERM (docs/console.md).

        METHOD is package.Service/Method, Service/Method, or Method when only one service has it.
        NAME is a message or enum with or without its package, or a METHOD.
        KEY is STORE/ENV/STORE_ID: STORE apple or google, ENV production or sandbox, STORE_ID the
        Apple original transaction id or the Google purchase token. N is 1...500 (default 100).

        options of health, call and the ledger commands:
          --addr HOST:PORT      the service's RPC address ([v6]:port for IPv6)
          --json                print compact one-line JSON instead of human output
          --timeout DURATION    deadline such as 500ms, 5s or 1m (default 5s; none for streams)
          --tls-cert FILE --tls-key FILE --tls-ca FILE
                                mutual TLS: this client's certificate and key, and the CA to trust
          -v, --verbose         print each call's trace id on standard error, `trace: ID`, before
                                the call: the id the services log it under (trace_id) and
                                `subctl trace ID` finds what the ledger recorded by
          --help                print this text

        exit status: 0 success, 1 a call failed (or history or events dead --all stopped at 100 pages), 2 usage error
        (or an unreadable JWS or --root file), 3 events verify found the event log wanting; apple verify refusing
        data: 10 malformed, 11 unsupported_algorithm, 12 bad_chain, 13 bad_certificate, 14 bad_signature,
        15 wrong_app, 16 wrong_environment, 17 retryable (the first refusal, the outer JWS before the ones inside)
        """

    static let connectionOptions: Set<String> = ["addr", "timeout", "tls-cert", "tls-key", "tls-ca"]
    private static let healthServices = ["ledger", "verifier", "entitlement"]

    /// Parses the arguments after the program name. Throws `usage` for a malformed command
    /// line, and `notFound` or `invalidArgument` when `call` names no method or several.
    public static func parse(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        if arguments.contains("--help") || arguments.contains("-h") || arguments.first == "help" { return .help }
        guard let command = arguments.first else {
            throw SubctlError(.usage, "missing command (\(commandNames))")
        }
        let rest = Array(arguments.dropFirst())
        let catalog = MessageCatalog.standard
        switch command {
        case "methods":
            _ = try scan(rest, command: command, values: [], flags: [], positionals: 0...0)
            return .methods
        case "describe":
            let scanned = try scan(
                rest, command: command, values: [], flags: [], positionals: 1...1, missing: "describe needs a NAME")
            return .describe(scanned.positionals[0])
        case "health":
            let scanned = try scan(
                rest, command: command, values: connectionOptions.union(["service"]), flags: ["json"],
                positionals: 0...0)
            let services: [String]
            if let service = scanned.values["service"] {
                guard healthServices.contains(service) else {
                    throw SubctlError(.usage, "--service expects verifier, ledger or entitlement, got \"\(service)\"")
                }
                services = [service]
            } else {
                services = healthServices
            }
            let candidates = services.compactMap { service in
                catalog.methods.first { $0.serviceName.lowercased() == service && $0.name == "Health" }?.fullName
            }
            return .health(candidates: candidates, options: try options(scanned, command: command, streaming: false))
        case "call":
            let scanned = try scan(
                rest, command: command, values: connectionOptions, flags: ["json"], positionals: 1...2,
                missing: "call needs a METHOD")
            let method = try catalog.method(named: scanned.positionals[0])
            let request: RequestSource =
                switch scanned.positionals.count > 1 ? scanned.positionals[1] : "{}" {
                case "-": .standardInput
                case let json: .json(json)
                }
            return .call(
                method: method, request: request,
                options: try options(scanned, command: command, streaming: method.isServerStreaming))
        case "account", "history", "inbox", "replay", "trace":
            return try parseLedger(command, rest)
        case "events":
            return try parseEvents(rest)
        case "access":
            return try parseAccess(rest)
        case "apple":
            return try parseApple(rest)
        case "google":
            return try parseGoogle(rest)
        case "import":
            return try parseImport(rest)
        case "find":
            return try parseFind(rest)
        case "console":
            return try parseConsole(rest)
        default:
            throw SubctlError(.usage, "unknown command \"\(command)\" (\(commandNames))")
        }
    }

    private static let commandNames =
        "health, call, methods, describe, account, history, inbox, replay, trace, events, access, apple, google, import, find or console"

    /// The arguments of one command, sorted into option values, flags and positionals.
    struct Scanned {
        var values: [String: String] = [:]
        /// The values of repeatable options, in command-line order.
        var repeated: [String: [String]] = [:]
        var flags: Set<String> = []
        var positionals: [String] = []
    }

    /// Sorts `arguments`; throws `usage` for an option not in `values` or `flags`, one given twice
    /// unless it is `repeatable` (those must be in `values` too), and `missing` for fewer
    /// positionals than `positionals` allows.
    static func scan(
        _ arguments: [String], command: String, values: Set<String>, repeatable: Set<String> = [],
        flags: Set<String>, positionals: ClosedRange<Int>, missing: String = ""
    ) throws(SubctlError) -> Scanned {
        var scanned = Scanned()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                scanned.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let option = argument.drop { $0 == "-" }
            let name = String(option.prefix { $0 != "=" })
            let inline = option.contains("=") ? String(option.drop { $0 != "=" }.dropFirst()) : nil
            guard argument.hasPrefix("--"), values.contains(name) || flags.contains(name) else {
                throw SubctlError(.usage, "unknown option \(argument.prefix { $0 != "=" }) for \(command)")
            }
            guard scanned.values[name] == nil && !scanned.flags.contains(name) else {
                throw SubctlError(.usage, "--\(name) is given twice")
            }
            if flags.contains(name) {
                guard inline == nil else { throw SubctlError(.usage, "--\(name) takes no value") }
                scanned.flags.insert(name)
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard index < arguments.count else { throw SubctlError(.usage, "--\(name) needs a value") }
                value = arguments[index]
                index += 1
            }
            if repeatable.contains(name) {
                scanned.repeated[name, default: []].append(value)
            } else {
                scanned.values[name] = value
            }
        }
        guard scanned.positionals.count >= positionals.lowerBound else {
            throw SubctlError(.usage, missing)
        }
        guard scanned.positionals.count <= positionals.upperBound else {
            throw SubctlError(
                .usage, "unexpected argument \"\(scanned.positionals[positionals.upperBound])\" for \(command)")
        }
        return scanned
    }

    /// The connection options of a command; throws `usage` for a missing or bad one.
    static func options(_ scanned: Scanned, command: String, streaming: Bool) throws(SubctlError) -> CallOptions {
        guard let addressText = scanned.values["addr"] else {
            throw SubctlError(.usage, "\(command) needs --addr HOST:PORT")
        }
        guard let address = HostPort(parsing: addressText), address.port > 0 else {
            throw SubctlError(.usage, "--addr expects HOST:PORT with a port 1...65535, got \"\(addressText)\"")
        }
        var timeout: Duration? = streaming ? nil : CallOptions.defaultTimeout
        if let text = scanned.values["timeout"] {
            guard let parsed = duration(text) else {
                throw SubctlError(.usage, "--timeout expects a duration such as 500ms, 5s or 1m, got \"\(text)\"")
            }
            timeout = parsed
        }
        let files = ["tls-cert", "tls-key", "tls-ca"].compactMap { scanned.values[$0] }
        guard files.isEmpty || files.count == 3 else {
            throw SubctlError(.usage, "mutual TLS needs --tls-cert, --tls-key and --tls-ca together")
        }
        return CallOptions(
            address: address, timeout: timeout, json: scanned.flags.contains("json"),
            tls: files.isEmpty ? nil : .init(certificatePath: files[0], keyPath: files[1], caPath: files[2]))
    }

    /// A positive whole number of `ms`, `s`, `m` or `h`.
    private static func duration(_ text: String) -> Duration? {
        for (suffix, milliseconds) in [("ms", Int64(1)), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
        where text.hasSuffix(suffix) {
            guard let count = Int64(text.dropLast(suffix.count)), count > 0 else { return nil }
            let (total, overflow) = count.multipliedReportingOverflow(by: milliseconds)
            return overflow ? nil : .milliseconds(total)
        }
        return nil
    }
}
