import Wire

extension CommandRunner {
    /// Runs a ledger command: one typed call (one per page for `history --all`), then a line per
    /// item, or with `--json` each answer's compact JSON as `call --json` prints it.
    func run(_ command: LedgerCommand, transport: any RPCTransport, options: CallOptions) async throws(SubctlError) {
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
            var events = 0
            for page in 1... {
                let answer = try await transport.call(method, request, as: GetHistoryResponse.self, timeout: timeout)
                try write(answer, options) { $0.events.map(OutputText.event) }
                events += answer.response.events.count
                guard let token = answer.response.nextPageToken else { break }
                guard all else {
                    if !options.json { write("more events: add --all to read every page") }
                    return
                }
                guard page < LedgerCommand.maximumPages else {
                    throw SubctlError(
                        .incomplete, "stopped after \(page) pages of history; more remain (--page-size 500 reads more)")
                }
                request.pageToken = token
            }
            if events == 0 && !options.json { write("no events") }
        case .inbox(let status, let store, let pageSize):
            let request = ListInboxRequest(status: status, store: store, pageSize: pageSize)
            let answer = try await transport.call(method, request, as: ListInboxResponse.self, timeout: timeout)
            try write(answer, options) { response in
                (response.entries.isEmpty ? ["no entries"] : response.entries.map(OutputText.inboxEntry))
                    + (response.nextPageToken == nil ? [] : ["more entries: raise --page-size (at most 500)"])
            }
        case .replay(let store, let notificationID):
            let request = ReplayInboxRequest(store: store, notificationID: notificationID)
            let answer = try await transport.call(method, request, as: MarkInboxResponse.self, timeout: timeout)
            guard options.json || answer.response.entry != nil else {
                throw SubctlError(.dataLoss, "\(method) answered without the entry")
            }
            try write(answer, options) { response in response.entry.map { [OutputText.inboxEntry($0)] } ?? [] }
        case .events, .tail, .deadLetters, .replayDeliveries, .testEvent:
            try await runEvents(command, transport: transport, options: options)
        }
    }

    /// `events list` and `events tail`: pages of the log; `tail` goes on from the newest (or
    /// `after`), asking again every half second while nothing is new.
    func runEvents(_ command: LedgerCommand, transport: any RPCTransport, options: CallOptions)
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
                    + ["last sequence \(response.lastSequence)"]
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
        case .deadLetters(let endpoint, let limit):
            let request = ListDeadLettersRequest(endpoint: endpoint, limit: limit)
            let answer = try await transport.call(
                method, request, as: ListDeadLettersResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                response.deadLetters.isEmpty ? ["no dead letters"] : response.deadLetters.map(OutputText.deadLetter)
            }
        case .replayDeliveries(let endpoint, let after):
            let request = ReplayDeliveriesRequest(endpoint: endpoint, afterSequence: after)
            let answer = try await transport.call(
                method, request, as: GetDeliveryStateResponse.self, timeout: options.timeout)
            try write(answer, options) { response in
                ["endpoint \(endpoint) delivered through \(response.deliveredThrough) enabled"]
            }
        case .testEvent(let account):
            let answer = try await transport.call(
                method, LogTestEventRequest(accountID: account), as: Event.self, timeout: options.timeout)
            try write(answer, options) { [OutputText.loggedEvent($0)] }
        default:
            break
        }
    }

    /// Writes the answer's compact JSON with `--json`, else each of its human `lines`.
    private func write<Response: ProtoMessage>(
        _ answer: (response: Response, bytes: [UInt8]), _ options: CallOptions, lines: (Response) -> [String]
    ) throws(SubctlError) {
        if options.json {
            write(try JSONMessages.decodeToJSON(answer.bytes, as: Response.protoName, pretty: false))
        } else {
            lines(answer.response).forEach(write)
        }
    }
}
