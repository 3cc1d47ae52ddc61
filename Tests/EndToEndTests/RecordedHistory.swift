import Wire

/// What CheckAccess answered about instants of a recorded replay, each asked right after the
/// notification of that instant was processed, and what it answers about them once the replay
/// is over. `allowed` and `reason` must stand. `until` is left out: in the recorded data later
/// facts move it both ways (renewals; an upgrade to a plan with a shorter period, a cancellation
/// in grace that ends access at once, a plan change, a revocation), and `AccessHistoryPropertyTests`
/// holds it to its exceptions.
struct RecordedHistory {
    struct Entry {
        /// The notification the instant is the time of.
        var name: String
        var account: String
        var at: Int64
        var live: CheckAccessResponse
        var again: CheckAccessResponse?
    }

    private(set) var entries: [Entry] = []

    /// Records `answer`, asked for `account` at `at` right after notification `name`.
    mutating func append(_ name: String, account: String, at: Int64, _ answer: CheckAccessResponse) {
        entries.append(Entry(name: name, account: account, at: at, live: answer))
    }

    /// Asks every recorded instant again, in batches.
    mutating func askAgain(_ stack: StoreSimStack) async throws {
        let again = try await EntitlementStack.answers(
            stack.entitlementClient,
            entries.map { CheckAccessRequest(accountID: $0.account, capability: "pro", atMilliseconds: $0.at) })
        for index in entries.indices { entries[index].again = again[index] }
    }

    /// One line per instant whose answer now allows where it denied, or the other way, or denies
    /// for another reason.
    var changed: [String] {
        entries.compactMap { entry in
            guard let again = entry.again, entry.live.allowed != again.allowed || entry.live.reason != again.reason
            else { return nil }
            return
                "  \(entry.account) at \(entry.at) (\(entry.name)): answered \(entry.live.described()), now \(again.described())"
        }
    }
}
