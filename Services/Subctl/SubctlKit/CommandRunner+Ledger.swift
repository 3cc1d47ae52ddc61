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
