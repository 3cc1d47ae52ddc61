public import Clients
import Model
import RPC
public import Wire

/// `Find`: what a value a customer quotes names, read from the ledger (`FindSubscriptions`, then
/// each subscription's state with its periods and status intervals, and the latest events) and,
/// for an App Store order id the ledger cannot know, from the App Store (Look Up Order ID).
public struct SubscriberFinder: Sendable {
    /// Events in an answer, newest first.
    public static let maxEvents: UInt32 = 20

    let ledger: any LedgerClientProtocol
    /// Reads an App Store order id's purchases: their original transaction ids, verified; nil
    /// when no App Store is configured.
    let appleOrder: (@Sendable (String) async throws -> [String])?

    public init(ledger: any LedgerClientProtocol, appleOrder: (@Sendable (String) async throws -> [String])?) {
        self.ledger = ledger
        self.appleOrder = appleOrder
    }

    /// The answer for `value`; NOT_FOUND naming what was tried when nothing matches. Order ids
    /// are upper case (the App Store's, Play's `GPA.…`); a customer reading one out may not say
    /// so: a value that finds nothing as given is tried in upper case, and taken only when it is
    /// then found as an order id (account ids and purchase tokens are case-sensitive).
    public func find(_ value: String) async throws -> FindResponse {
        let upper = value.uppercased()
        guard upper != value, Self.couldBeAppleOrderID(upper) || upper.hasPrefix("GPA.") else {
            return try await findAsGiven(value)
        }
        let original: any Error
        do {
            return try await findAsGiven(value)
        } catch {
            original = error
        }
        guard (original as? RPCError)?.code == .notFound else { throw original }
        let inUpperCase: FindResponse
        do {
            inUpperCase = try await findAsGiven(upper)
        } catch {
            guard (error as? RPCError)?.code == .notFound else { throw error }
            throw original
        }
        guard inUpperCase.takenAs == .appleOrderID || inUpperCase.takenAs == .googleOrderID else { throw original }
        return inUpperCase
    }

    private func findAsGiven(_ value: String) async throws -> FindResponse {
        let found = try await ledger.findSubscriptions(FindSubscriptionsRequest(value: value))
        var response = FindResponse()
        var matches = found.matches
        var tried = [
            "an account id", "an App Store transaction or original transaction id",
            "a Google Play purchase token or order id",
        ]
        if matches.isEmpty, found.accountID == nil, let appleOrder, Self.couldBeAppleOrderID(value) {
            tried.append("an App Store order id (Look Up Order ID)")
            for original in try await appleOrder(value) {
                let recorded = try await ledger.findSubscriptions(FindSubscriptionsRequest(value: original))
                    .matches.filter { $0.key?.store == .apple && $0.key?.storeID == original }
                if recorded.isEmpty, !response.unrecordedOriginalTransactionIDs.contains(original) {
                    response.unrecordedOriginalTransactionIDs.append(original)
                }
                for var match in recorded where !matches.contains(where: { $0.key == match.key }) {
                    match.matched = .appleOrderID
                    matches.append(match)
                }
            }
        }
        guard !matches.isEmpty || found.accountID != nil || !response.unrecordedOriginalTransactionIDs.isEmpty else {
            throw RPCError(
                .notFound,
                "nothing in the ledger matches \"\(Self.shown(value))\" as \(tried.joined(separator: ", ")); "
                    + "check the value the customer quoted")
        }
        response.takenAs =
            found.accountID != nil
            ? .accountID
            : (matches.first?.matched ?? (response.unrecordedOriginalTransactionIDs.isEmpty ? nil : .appleOrderID))
        var accounts: [String] = found.accountID.map { [$0] } ?? []
        for match in matches {
            if let account = match.accountID, !account.isEmpty, !accounts.contains(account) { accounts.append(account) }
        }
        response.accountIDs = accounts
        for match in matches {
            guard let key = match.key, let (subscription, periods) = try await ledger.recordedState(key) else {
                continue
            }
            response.subscriptions.append(
                FoundSubscription(
                    matched: match.matched, subscription: subscription,
                    periods: Self.shownPeriods(periods, store: key.store)))
        }
        var events: [LifecycleEvent] = []
        for account in accounts {
            events += try await ledger.getHistory(GetHistoryRequest(accountID: account, pageSize: Self.maxEvents))
                .events
        }
        // Each subscription's own too: events recorded before it was linked (an import's
        // `imported`, a purchase notified before anyone verified it) name no account.
        for match in matches {
            events += try await ledger.getHistory(GetHistoryRequest(key: match.key, pageSize: Self.maxEvents)).events
        }
        var seen = Set<UInt64>()
        response.events = Array(
            events.sorted { ($0.position ?? 0) > ($1.position ?? 0) }
                .filter { event in event.position.map { seen.insert($0).inserted } ?? true }
                .prefix(Int(Self.maxEvents)))
        return response
    }

    /// Recorded periods as `find` answers them: by end (no end last), without raw data. Play
    /// names no start per order (each carries the subscription's `startTime`): a Google order
    /// after another starts where that one ends, unless it says later.
    static func shownPeriods(_ periods: [Period], store: Store) -> [Period] {
        var shown = periods.sorted {
            ($0.endMilliseconds ?? Int64.max, $0.startMilliseconds, $0.periodID)
                < ($1.endMilliseconds ?? Int64.max, $1.startMilliseconds, $1.periodID)
        }
        for index in shown.indices {
            shown[index].raw = nil
            if store == .google, index > 0, let previousEnd = shown[index - 1].endMilliseconds,
                shown[index].startMilliseconds < previousEnd, (shown[index].endMilliseconds ?? Int64.max) > previousEnd
            {
                shown[index].startMilliseconds = previousEnd
            }
        }
        return shown
    }

    /// `value` as messages and logs show it: whole up to 40 bytes; longer (a purchase token), its
    /// first 12 characters and its length, so that no whole token is repeated.
    static func shown(_ value: String) -> String {
        value.utf8.count <= 40 ? value : "\(value.prefix(12))… (\(value.utf8.count) bytes)"
    }

    /// Whether `value` has the shape of an App Store order id (the receipt's: uppercase letters
    /// and digits, 10 to 12 of them), so that the App Store is asked only about such values.
    static func couldBeAppleOrderID(_ value: String) -> Bool {
        (10...12).contains(value.utf8.count)
            && value.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
            && !value.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }
}
