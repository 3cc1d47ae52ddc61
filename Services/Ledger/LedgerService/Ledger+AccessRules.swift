import Foundation
public import Lifecycle
import Model
public import Observability
import Synchronization
import Wire

/// Stored App Store access periods derived again when the rules that derive them change.
///
/// A subscription's state carries its access periods, derived from its recorded periods when it
/// is written. When the rules change (`Period.accessPeriods`), a state nothing writes again would
/// keep the answer of the old rules: a chain that ended, or one whose customer upgraded after a
/// renewal was charged early, may get no store fact for a month or ever. So a ledger that starts
/// under newer rules than the stored states were derived with reads every App Store subscription
/// with recorded periods, a page at a time, derives its periods again and writes each one that
/// differs as a change of the feed (views and the event log take it like any other), then
/// records the version in the `ledger.access-rules` cursor. A pass cut short is run again from
/// the start: a state derived already compares equal and is not written twice.
extension Ledger {
    /// The version of the App Store access rules the stored states are derived with, raised with
    /// every change to them. 1: a renewal charged early that an immediate upgrade replaced gives
    /// no access; a family-sharing REVOKE ends the chain's periods that run past it.
    public static let appStoreAccessRulesVersion: Int64 = 1
    static let accessRulesCursor = "ledger.access-rules"
    static let accessRulesPage = 200

    /// One page of the pass.
    public struct AccessRulesPage: Sendable, Equatable {
        /// Subscriptions read and written again.
        public var read = 0
        public var changed = 0
        /// Where the next page starts; nil when this one was the last (the version is recorded).
        var next: PairCursor?

        public var isLast: Bool { next == nil }
    }

    /// Derives the App Store subscriptions after `after` (by environment and store id) again, up
    /// to `limit` of them, in one write. Nil when the stored states are derived with the current
    /// rules already.
    func deriveAccessAgain(after: PairCursor?, limit: Int = accessRulesPage) async throws -> AccessRulesPage? {
        let version = Self.appStoreAccessRulesVersion
        let at = now()
        return try await write { tx in
            let done = try tx.query(
                "SELECT value FROM cursors WHERE name = $1", [.text(Self.accessRulesCursor)]
            ).int(0, "value")
            guard (done ?? 0) < version else { return nil }
            var sql = "SELECT environment, store_id, state FROM subscriptions WHERE store = $1"
            var parameters: [SQLValue] = [.int(Int64(Store.apple.rawValue))]
            if let after {
                parameters += [.int(after.number), .text(after.text)]
                sql += " AND (environment > $2 OR (environment = $2 AND store_id > $3))"
            }
            parameters.append(.int(Int64(limit)))
            sql += " ORDER BY environment, store_id LIMIT $\(parameters.count)"
            let rows = try tx.query(sql, parameters)
            var page = AccessRulesPage(read: rows.count)
            for index in 0..<rows.count {
                // A state that does not read is left to the snapshot's and the operator's checks.
                guard var state = try? Self.decode(Subscription.self, rows.blob(index, "state")) else { continue }
                let recorded = try Self.storedPeriods(tx, state.key)
                // A state written with its merged periods and no rows (an import) has nothing to
                // derive them from.
                guard !recorded.isEmpty else { continue }
                let access = Self.accessPeriods(recorded, of: state.key, ownership: state.ownership)
                guard access != state.periods else { continue }
                state.periods = access
                let position = try Self.nextPosition(tx)
                try Self.saveSubscription(tx, state, position: position)
                try Self.appendChange(
                    tx,
                    Change(
                        position: position, committedTimeMilliseconds: at, kind: .subscription, subscription: state))
                page.changed += 1
            }
            if rows.count == limit {
                let last = rows.count - 1
                page.next = PairCursor(
                    number: rows.int(last, "environment") ?? 0, text: rows.text(last, "store_id") ?? "")
            } else {
                try tx.query(
                    """
                    INSERT INTO cursors (name, value, updated_ms) VALUES ($1, $2, $3)
                    ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_ms = excluded.updated_ms
                    WHERE cursors.value < excluded.value
                    """, [.text(Self.accessRulesCursor), .int(version), .int(at)])
            }
            return page
        }
    }

    /// The whole pass: nil when nothing needed deriving again, else the subscriptions read and
    /// written again.
    public func deriveAccessAgain() async throws -> AccessRulesPage? {
        guard var page = try await deriveAccessAgain(after: nil) else { return nil }
        var total = page
        while let next = page.next {
            // Another instance may finish the pass meanwhile.
            guard let following = try await deriveAccessAgain(after: next) else { break }
            page = following
            total.read += page.read
            total.changed += page.changed
        }
        total.next = nil
        return total
    }
}

/// Runs `Ledger.deriveAccessAgain()` once the ledger serves, and again after a failure (every
/// `retry`) until it completes; logs what it did.
public final class AccessRulesPass: LifecycleService {
    public let name = "access-rules"
    let ledger: Ledger
    let logger: Logger
    let retry: Duration
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init(ledger: Ledger, logger: Logger, retry: Duration = .seconds(5)) {
        self.ledger = ledger
        self.logger = logger
        self.retry = retry
    }

    public func start() async throws {
        let (ledger, logger, retry) = (ledger, logger, retry)
        let running = Task {
            while !Task.isCancelled {
                do {
                    let rules = "\(Ledger.appStoreAccessRulesVersion)"
                    if let done = try await ledger.deriveAccessAgain() {
                        logger.info(
                            "App Store access periods derived again",
                            ["rules": rules, "read": "\(done.read)", "changed": "\(done.changed)"])
                    } else {
                        logger.info("App Store access periods are derived under the current rules", ["rules": rules])
                    }
                    return
                } catch {
                    logger.warning(
                        "deriving App Store access periods again failed; trying again", ["error": "\(error)"])
                }
                do { try await Task.sleep(for: retry) } catch { return }
            }
        }
        task.withLock { $0 = running }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}
