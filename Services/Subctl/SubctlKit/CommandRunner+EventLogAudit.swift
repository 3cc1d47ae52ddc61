import RPC
import Wire

extension CommandRunner {
    /// `events verify`: where event computation stands (`GetEventState`), every page of the log,
    /// then the feed's changes after `from` (nil: where the log began) up to that position (streamed, one at a time),
    /// compared by `EventLogAudit`. Prints a summary line and a line per problem; throws
    /// `inconsistent` when there is any, `incomplete` when the feed ended before the position.
    /// A log not yet started is said so, with nothing checked.
    func verifyEvents(after from: UInt64?, transport: any ClientTransport, options: CallOptions)
        async throws(SubctlError)
    {
        let state = try await transport.call(
            LedgerRPC.getEventState.name, GetEventStateRequest(), as: GetEventStateResponse.self,
            timeout: options.timeout
        ).response
        guard state.started else {
            write("the event log has not started: nothing checked")
            return
        }
        // A ledger whose cursor is beyond its feed (a restored backup) has no changes up there:
        // reading on would wait for them.
        let newest = try await transport.call(
            LedgerRPC.getFeedPosition.name, GetFeedPositionRequest(), as: GetFeedPositionResponse.self,
            timeout: options.timeout
        ).response.position
        // From where the log began, unless asked otherwise.
        var audit = EventLogAudit(
            after: from ?? state.startFeedPosition, through: min(state.throughFeedPosition, newest))
        var after: UInt64 = 0
        while true {
            let page = try await transport.call(
                LedgerRPC.listEvents.name, ListEventsRequest(afterSequence: after, limit: 1000),
                as: ListEventsResponse.self, timeout: options.timeout
            ).response
            for event in page.events { audit.record(event) }
            guard page.lastSequence > after else { break }
            after = page.lastSequence
        }
        if audit.through > audit.after {
            // The feed never ends: the stream is left once it reaches the range's end. It may
            // take longer than one call's deadline.
            var reached = audit.after
            try await transport.readStream(
                LedgerRPC.watchChanges.name, request: WatchChangesRequest(after: audit.after).serialized(),
                timeout: nil
            ) { bytes throws(SubctlError) in
                let change: Change
                do throws(RPCError) {
                    change = try Change(serialized: bytes)
                } catch {
                    throw SubctlError(.dataLoss, error.message)
                }
                audit.check(change)
                reached = change.position
                return reached < audit.through
            }
            guard reached >= audit.through else {
                throw SubctlError(
                    .incomplete, "the feed ended at position \(reached), before \(audit.through): nothing concluded")
            }
        }
        let problems = audit.problems
        write(OutputText.eventLogSummary(audit, problems: problems))
        problems.map(OutputText.eventLogProblem).forEach(write)
        guard problems.isEmpty else {
            let positions = Array(Set(problems.map(\.position))).sorted()
            let named = positions.prefix(10).map(String.init).joined(separator: ", ")
            throw SubctlError(
                .inconsistent,
                "the event log does not hold each change's lifecycle events exactly once (positions \(named)"
                    + (positions.count > 10 ? " and \(positions.count - 10) more)" : ")"))
        }
    }
}
