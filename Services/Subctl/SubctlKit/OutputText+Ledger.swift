public import Model
public import Wire

/// The human output of the ledger commands: one line per item, `label value` pairs separated by
/// single spaces, `-` for an absent value, times in ISO-8601 UTC. Raw payloads are never printed.
extension OutputText {
    /// `account ID`, then a `subscription` line per subscription and a `link` line per link.
    public static func account(_ response: GetAccountResponse) -> [String] {
        ["account \(response.accountID)"] + response.subscriptions.map(subscription) + response.links.map(link)
    }

    /// `subscription apple/production/2000001 product pro.monthly state active expires
    /// 2024-06-01T12:00:00Z auto-renew yes account acct-1`.
    public static func subscription(_ subscription: Subscription) -> String {
        "subscription \(subscription.key) product \(subscription.productID) state \(text(subscription.state))"
            + " expires \(time(subscription.expiresTimeMilliseconds))"
            + " auto-renew \(subscription.autoRenew ? "yes" : "no") account \(text(subscription.accountID))"
    }

    /// `link apple/production/2000001 account acct-1 linked 2024-05-01T12:00:00Z ref token`.
    public static func link(_ link: AccountLink) -> String {
        "link \(link.key) account \(link.accountID) linked \(time(link.linkedTimeMilliseconds))"
            + " ref \(text(link.storeAccountRef))"
    }

    /// `#42 2024-05-01T12:00:00Z renewed state active type DID_RENEW/- account acct-1 key
    /// apple/production/2000001 notification id`: position, store time, kind, state, the
    /// store's type/subtype, account, subscription and notification; then, for an operation a
    /// caller made (a grant, an import, an action at a store), `actor NAME reason TEXT` (the
    /// reason last, as free text with line breaks as spaces).
    public static func event(_ event: LifecycleEvent) -> String {
        var line =
            "#\(text(event.position)) \(time(event.storeTimeMilliseconds)) \(text(event.kind)) state \(text(event.state))"
            + " type \(text(event.storeType))/\(text(event.storeSubtype)) account \(text(event.accountID))"
            + " key \(event.key) notification \(text(event.notificationID))"
        if event.actor != nil || event.reason != nil {
            let reason = event.reason.map { $0.split(whereSeparator: \.isNewline).joined(separator: " ") }
            line += " actor \(text(event.actor)) reason \(text(reason))"
        }
        return line
    }

    /// `apple id DID_RENEW/- failed attempts 3 received 2024-05-01T12:00:00Z error reason`:
    /// store, notification id, type/subtype, status, attempts, received time, and the last
    /// error last because it is free text (line breaks become spaces).
    public static func inboxEntry(_ entry: InboxEntry) -> String {
        let error = entry.lastError.map { $0.split(whereSeparator: \.isNewline).joined(separator: " ") }
        return "\(text(entry.store)) \(entry.notificationID) \(entry.notificationType)/\(text(entry.subtype))"
            + " \(text(entry.status)) attempts \(entry.attempts) received \(time(entry.receivedTimeMilliseconds))"
            + " error \(text(error))"
    }

    /// `subctl trace`: a line per inbox entry (`inbox ` and `inboxEntry`), then a line per event
    /// (`event ` and `event`), in the order recorded; `nothing recorded under trace ID` when the
    /// ledger kept nothing under it.
    public static func trace(_ response: FindTraceResponse, traceID: String) -> [String] {
        let lines =
            response.inboxEntries.map { "inbox " + inboxEntry($0) } + response.events.map { "event " + event($0) }
        return lines.isEmpty ? ["nothing recorded under trace \(traceID)"] : lines
    }

    /// Epoch milliseconds as ISO-8601 UTC, `2024-05-01T12:00:00Z`, with `.250` before the `Z`
    /// when not a whole second; `-` for nil.
    public static func time(_ milliseconds: Int64?) -> String {
        milliseconds.map(EpochTime.iso8601) ?? "-"
    }

    private static func text(_ value: (some CustomStringConvertible)?) -> String { value.map(\.description) ?? "-" }

    /// `#12 evt_40_0 subscription.renewed account acct-1 key apple/production/2000001 at
    /// 2024-05-01T12:00:00Z`, and for access events `capability pro until …` or `reason expired`.
    public static func loggedEvent(_ event: Event) -> String {
        var line =
            "#\(event.sequence) \(event.id) \(event.type) account \(text(event.accountID))"
            + " key \(event.key.map { "\($0)" } ?? "-") at \(time(event.recordedTimeMilliseconds))"
        if let capability = event.capability {
            line += " capability \(capability)"
            line += event.reason.map { " reason \($0)" } ?? " until \(time(event.accessUntilMilliseconds))"
        }
        return line
    }

    /// `checked 12 changes and 15 lifecycle events after feed position 0 through 12: nothing
    /// missing, doubled or unexpected`, or how many of each `problems` holds (`1 missing, 0
    /// doubled, 1 unexpected`).
    public static func eventLogSummary(_ audit: EventLogAudit, problems: [EventLogAudit.Problem]) -> String {
        let counts =
            problems.isEmpty
            ? "nothing missing, doubled or unexpected"
            : [EventLogAudit.Problem.Kind.missing, .doubled, .unexpected].map { kind in
                "\(problems.count { $0.kind == kind }) \(kind.rawValue)"
            }.joined(separator: ", ")
        let changes = "\(audit.changesChecked) change\(audit.changesChecked == 1 ? "" : "s")"
        let events = "\(audit.eventsChecked) lifecycle event\(audit.eventsChecked == 1 ? "" : "s")"
        return "checked \(changes) and \(events) after feed position \(audit.after) through \(audit.through): \(counts)"
    }

    /// One problem of `events verify`, naming the position, the id and the log's sequences:
    /// `missing: position 42 evt_42_1 (subscription.renewed) is not in the log`,
    /// `doubled: position 42 evt_42_0 (subscription.renewed) is logged 2 times, at #7 #9`,
    /// `unexpected: position 42 evt_42_2 is logged at #12 as subscription.renewed; the feed gives
    /// no such event` (or `; the change gives subscription.expired`).
    public static func eventLogProblem(_ problem: EventLogAudit.Problem) -> String {
        let head = "\(problem.kind.rawValue): position \(problem.position) \(problem.id)"
        let sequences = problem.logged.map { "#\($0.sequence)" }.joined(separator: " ")
        switch problem.kind {
        case .missing:
            return "\(head) (\(text(problem.expectedType))) is not in the log"
        case .doubled:
            return "\(head) (\(text(problem.expectedType))) is logged \(problem.logged.count) times, at \(sequences)"
        case .unexpected:
            let copies = problem.logged.map { logged in
                "#\(logged.sequence) as \(logged.type)"
                    + (logged.position == problem.position ? "" : " of position \(logged.position)")
            }
            return "\(head) is logged at \(copies.joined(separator: ", "))"
                + (problem.expectedType.map { "; the change gives \($0)" } ?? "; the feed gives no such event")
        }
    }

    /// `crm #12 attempts 9 last-status 503 first 2024-05-01T12:00:00Z dead 2024-05-04T12:00:00Z
    /// event evt_40_0 subscription.renewed`.
    public static func deadLetter(_ letter: DeadLetter) -> String {
        let attempt = letter.attempt ?? DeliveryAttempt()
        return "\(letter.endpoint) #\(attempt.sequence) attempts \(attempt.attempts) last-status \(attempt.lastStatus)"
            + " first \(time(attempt.firstAttemptMilliseconds)) dead \(time(attempt.deadMilliseconds))"
            + " event \(attempt.event?.id ?? "-") \(attempt.event?.type ?? "-")"
    }
}
