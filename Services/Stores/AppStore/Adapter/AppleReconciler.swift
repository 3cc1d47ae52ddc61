import AppStore
import Foundation
public import Lifecycle
import Model
public import Observability
import Wire

/// Reconciliation for the App Store, every `interval`:
/// 1. inbox entries that failed, or are still pending a minute after they arrived, are
///    processed again;
/// 2. Get Notification History since the stored watermark (a ledger cursor per environment,
///    pulled with an hour of overlap; the inbox drops what it already has) fills in
///    notifications that never arrived;
/// 3. subscriptions at risk of being stale — in grace or billing retry, or with a period
///    ending within a day either side of now — are refreshed from the API.
public final class AppleReconciler: LifecycleService {
    public let name = "apple-reconciler"
    let adapter: AppleAdapter
    private let loop: PeriodicPass

    static let pendingGrace: Int64 = 60_000
    static let historyOverlap: Int64 = 3_600_000
    static let firstLookback: Int64 = 86_400_000
    static let riskWindow: Int64 = 86_400_000
    static let maxPerStep = 1000

    /// Passes every `interval` of `clock`'s time.
    public init(adapter: AppleAdapter, interval: Duration, clock: any ServiceClock = SystemClock()) {
        self.adapter = adapter
        loop = PeriodicPass(interval: interval, clock: clock)
    }

    public func start() async throws { loop.start { [self] in await runPass() } }

    public func shutdown() async { await loop.stop() }

    /// One reconciliation pass; failures are logged and left for the next pass. The pass is
    /// counted as completed when every step of it could list and pull what it needed.
    public func runPass() async {
        var completed = await retryInbox()
        for environment in adapter.verifiers.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            completed = await pullHistory(environment) && completed
        }
        completed = await refreshAtRisk() && completed
        adapter.counters.reconciliation.pass(completed: completed)
    }

    @discardableResult
    func retryInbox() async -> Bool {
        do {
            try await ReconcilerPaging.staleInbox(
                adapter.ledger, store: .apple, now: adapter.nowMilliseconds, pendingGrace: Self.pendingGrace,
                limit: Self.maxPerStep
            ) { entry in
                await adapter.process(
                    signedPayload: entry.rawPayload, environment: AppleEnvironment(entry.environment ?? .sandbox))
            }
        } catch {
            adapter.logger.warning("apple reconciliation cannot list the inbox", ["error": "\(error)"])
            return false
        }
        return true
    }

    @discardableResult
    func pullHistory(_ environment: AppleEnvironment) async -> Bool {
        do {
            try await ReconcilerPaging.sinceCursor(
                adapter.ledger, "apple-notification-history-\(environment.rawValue.lowercased())",
                now: adapter.nowMilliseconds, overlap: Self.historyOverlap, firstLookback: Self.firstLookback
            ) { start, end in
                let items = try await adapter.api.notificationHistory(start: start, end: end, environment: environment)
                for item in items {
                    try await adapter.recordFromHistory(item.signedPayload, environment: environment)
                }
            }
        } catch {
            adapter.logger.warning(
                "apple notification history not pulled", ["environment": environment.rawValue, "error": "\(error)"])
            return false
        }
        return true
    }

    @discardableResult
    func refreshAtRisk() async -> Bool {
        let now = adapter.nowMilliseconds
        let queries = [
            ListSubscriptionsRequest(store: .apple, state: .gracePeriod),
            ListSubscriptionsRequest(store: .apple, state: .billingRetry),
            ListSubscriptionsRequest(
                store: .apple, expiresAfterMilliseconds: now - Self.riskWindow,
                expiresBeforeMilliseconds: now + Self.riskWindow),
        ]
        do {
            try await ReconcilerPaging.eachSubscription(adapter.ledger, matching: queries, limit: Self.maxPerStep) {
                subscription in
                guard adapter.verifiers[AppleEnvironment(subscription.key.environment)] != nil else { return }
                do {
                    let refreshed = try await adapter.refresh(subscription.key)
                    adapter.counters.reconciliation.refreshed(changed: refreshed.changed)
                } catch {
                    adapter.logger.warning(
                        "apple subscription not refreshed", ["key": "\(subscription.key)", "error": "\(error)"])
                }
            }
        } catch {
            adapter.logger.warning("apple reconciliation cannot list subscriptions", ["error": "\(error)"])
            return false
        }
        return true
    }
}
