import Model
import RPC
import Wire

extension CommandRunner {
    /// Runs a ledger command: one typed call (one per page for `history --all`), then a line per
    /// item, or with `--json` each answer's compact JSON as `call --json` prints it.
    func run(_ command: LedgerCommand, transport: any ClientTransport, options: CallOptions) async throws(SubctlError) {
        let method = command.method
        let timeout = options.timeout
        switch command {
        case .account(let accountID):
            let answer = try await transport.call(
                method, GetAccountRequest(accountID: accountID), as: GetAccountResponse.self, timeout: timeout)
            try write(answer, options) { OutputText.account($0) }
        case .history(let subject, let pageSize, let all):
            var request = GetHistoryRequest(pageSize: pageSize)
            switch subject {
            case .account(let accountID): request.accountID = accountID
            case .key(let key): request.key = key
            }
            let pages = Pages<GetHistoryRequest, GetHistoryResponse>(
                all: all, what: "history", more: "more events", size: "--page-size", token: \.nextPageToken,
                next: { $0.pageToken = $1 })
            let events = try await read(
                pages, method, request, as: GetHistoryResponse.self, transport: transport, options: options
            ) { response in (response.events.count, response.events.map(OutputText.event)) }
            if events == 0 {
                switch subject {
                case .key(let key): try await requireSubscription(key, transport: transport, options: options)
                case .account(let accountID):
                    // NOT_FOUND for an account the ledger does not know, as `account` answers.
                    _ = try await transport.call(
                        LedgerCommand.account(accountID).method, GetAccountRequest(accountID: accountID),
                        as: GetAccountResponse.self, timeout: options.timeout)
                }
            }
            if events == 0 && !options.json { write("no events") }
        case .inbox(let status, let store, let pageSize):
            let request = ListInboxRequest(status: status, store: store, pageSize: pageSize)
            let answer = try await transport.call(method, request, as: ListInboxResponse.self, timeout: timeout)
            try write(answer, options) { response in
                (response.entries.isEmpty ? ["no entries"] : response.entries.map(OutputText.inboxEntry))
                    + (response.nextPageToken == nil ? [] : ["more entries: raise --page-size (at most 500)"])
            }
        case .replay(let store, let notificationID, let reason):
            let request = ReplayInboxRequest(store: store, notificationID: notificationID, reason: reason)
            let answer = try await transport.call(method, request, as: MarkInboxResponse.self, timeout: timeout)
            guard options.json || answer.response.entry != nil else {
                throw SubctlError(.dataLoss, "\(method) answered without the entry")
            }
            try write(answer, options) { response in response.entry.map { [OutputText.inboxEntry($0)] } ?? [] }
        case .trace(let traceID):
            let request = FindTraceRequest(traceID: traceID)
            let answer = try await transport.call(method, request, as: FindTraceResponse.self, timeout: timeout)
            try write(answer, options) { OutputText.trace($0, traceID: traceID) }
        case .events, .tail, .deadLetters, .replayDeliveries, .testEvent, .verifyEvents:
            try await runEvents(command, transport: transport, options: options)
        }
    }

    /// Throws NOT_FOUND, naming the key as written and where to look instead, when the ledger
    /// holds no subscription `key` (a history with no events is otherwise indistinguishable
    /// from a mistyped key).
    private func requireSubscription(_ key: SubscriptionKey, transport: any ClientTransport, options: CallOptions)
        async throws(SubctlError)
    {
        do throws(SubctlError) {
            _ = try await transport.call(
                "subscriptions.ledger.v1.Ledger/GetSubscription", GetSubscriptionRequest(key: key, stateOnly: true),
                as: GetSubscriptionResponse.self, timeout: options.timeout)
        } catch {
            guard error.code == SubctlError.Code.rpc(.notFound) else { throw error }
            let written = "\(key.store)/\(key.environment)/\(key.storeID)"
            throw SubctlError(
                .rpc(.notFound),
                "the ledger holds no subscription \(written): an App Store key is the original transaction id, "
                    + "a Google Play key the purchase token; `subctl find \(key.storeID)` looks for it as any id, "
                    + "in both environments")
        }
    }

    /// `events list` and `events tail`: pages of the log; `tail` goes on from the newest (or
    /// `after`), asking again every half second while nothing is new. The other `events` verbs:
    /// the dead letters, a replay, a test event, and `verify` (`verifyEvents`).
    func runEvents(_ command: LedgerCommand, transport: any ClientTransport, options: CallOptions)
        async throws(SubctlError)
    {
        let method = command.method
        switch command {
        case .events(let after, let limit, let types):
            let request = ListEventsRequest(afterSequence: after, limit: limit, types: types)
            let answer = try await transport.call(
                method, request, as: ListEventsResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                (response.events.isEmpty ? ["no events"] : response.events.map(OutputText.loggedEvent))
                    + [
                        "last sequence \(response.lastSequence)"
                            + (response.events.count >= Int(limit == 0 ? 100 : limit)
                                ? " (more may follow: --after \(response.lastSequence))" : "")
                    ]
            }
        case .tail(let after, let types, let count):
            var cursor = after
            if cursor == 0 {
                // From the newest: find where the log ends.
                while true {
                    let page = try await transport.call(
                        method, ListEventsRequest(afterSequence: cursor, limit: 1000), as: ListEventsResponse.self,
                        timeout: options.timeout)
                    guard page.response.lastSequence > cursor else { break }
                    cursor = page.response.lastSequence
                }
            }
            var printed = 0
            while count.map({ printed < $0 }) ?? true {
                let page = try await transport.call(
                    method, ListEventsRequest(afterSequence: cursor, limit: 1000, types: types),
                    as: ListEventsResponse.self, timeout: options.timeout)
                for event in page.response.events where count.map({ printed < $0 }) ?? true {
                    write(
                        options.json
                            ? try JSONMessages.decodeToJSON(event.serialized(), as: Event.protoName, pretty: false)
                            : OutputText.loggedEvent(event))
                    printed += 1
                }
                if page.response.lastSequence > cursor {
                    cursor = page.response.lastSequence
                } else {
                    try? await Task.sleep(for: .milliseconds(500))
                }
            }
        case .deadLetters(let endpoint, let limit, let all):
            let pages = Pages<ListDeadLettersRequest, ListDeadLettersResponse>(
                all: all, what: "dead letters", more: "more dead letters", size: "--limit", token: \.nextPageToken,
                next: { $0.pageToken = $1 })
            let letters = try await read(
                pages, method, ListDeadLettersRequest(endpoint: endpoint, limit: limit),
                as: ListDeadLettersResponse.self, transport: transport, options: options
            ) { response in (response.deadLetters.count, response.deadLetters.map(OutputText.deadLetter)) }
            if letters == 0 && !options.json { write("no dead letters") }
        case .replayDeliveries(let endpoint, let after, let sequence, let reason):
            let request = ReplayDeliveriesRequest(
                endpoint: endpoint, afterSequence: after, sequence: sequence, reason: reason)
            let answer = try await transport.call(
                method, request, as: GetDeliveryStateResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                ["endpoint \(endpoint) delivered through \(response.deliveredThrough) enabled"]
            }
        case .testEvent(let account):
            let answer = try await transport.call(
                method, LogTestEventRequest(accountID: account), as: Event.self, timeout: options.timeout)
            try write(answer, options) { [OutputText.loggedEvent($0)] }
        case .verifyEvents(let from):
            try await verifyEvents(after: from, transport: transport, options: options)
        default:
            break
        }
    }

    /// How a listing is read page by page.
    struct Pages<Request, Response> {
        /// Every page (at most `LedgerCommand.maximumPages`), or the first and a note when more remain.
        let all: Bool
        /// What is listed, for the error after the last page read ("history").
        let what: String
        /// The note that more remain ("more events").
        let more: String
        /// The flag that makes pages larger.
        let size: String
        let token: (Response) -> String?
        let next: (inout Request, String) -> Void
    }

    /// Calls `method` for `first` and, with `pages.all`, for every page after it, writing each
    /// answer; `items` gives a page's count and lines. Returns the items written.
    private func read<Request: ProtoMessage, Response: ProtoMessage>(
        _ pages: Pages<Request, Response>, _ method: String, _ first: Request, as: Response.Type,
        transport: any ClientTransport, options: CallOptions, items: (Response) -> (count: Int, lines: [String])
    ) async throws(SubctlError) -> Int {
        var request = first
        var count = 0
        for page in 1... {
            let answer = try await transport.call(method, request, as: Response.self, timeout: options.timeout)
            try write(answer, options) { items($0).lines }
            count += items(answer.response).count
            guard let token = pages.token(answer.response) else { break }
            guard pages.all else {
                if !options.json { write("\(pages.more): add --all to read every page") }
                break
            }
            guard page < LedgerCommand.maximumPages else {
                throw SubctlError(
                    .incomplete,
                    "stopped after \(page) pages of \(pages.what); more remain (\(pages.size) 500 reads more)")
            }
            pages.next(&request, token)
        }
        return count
    }

    /// Writes the answer's compact JSON with `--json`, else each of its human `lines`.
    func write<Response: ProtoMessage>(
        _ answer: (response: Response, bytes: [UInt8]), _ options: CallOptions, lines: (Response) -> [String]
    ) throws(SubctlError) {
        if options.json {
            write(try JSONMessages.decodeToJSON(answer.bytes, as: Response.protoName, pretty: false))
        } else {
            lines(answer.response).forEach(write)
        }
    }
}
