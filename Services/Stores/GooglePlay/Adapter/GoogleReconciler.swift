import Clients
import Foundation
import GooglePlay
public import Lifecycle
import Model
public import Observability
import Wire

/// Reconciliation for Google Play, every `interval`:
/// 1. inbox items that failed, or are still pending a minute after they arrived, are done
///    again: notifications are processed, owed acknowledgements are sent;
/// 2. voided purchases since the stored watermark (a ledger cursor per package, pulled with an
///    hour of overlap, never further back than Google lists: an older gap is logged and
///    counted) revoke the order each names from its void time;
/// 3. purchases at risk of being stale — in grace, on hold, paused or pending, or with a period
///    ending within a day either side of now — are refreshed from the Play Developer API.
public final class GoogleReconciler: LifecycleService {
    public let name = "google-reconciler"
    let adapter: GoogleAdapter
    private let loop: PeriodicPass

    static let pendingGrace: Int64 = 60_000
    static let voidedOverlap: Int64 = 3_600_000
    /// Google refuses a voided-purchases `startTime` older than 30 days: a few minutes less,
    /// for the clocks' difference.
    static let firstLookback: Int64 = 30 * 86_400_000 - 600_000
    static let riskWindow: Int64 = 86_400_000
    static let maxPerStep = 1000

    /// Passes every `interval` of `clock`'s time.
    public init(adapter: GoogleAdapter, interval: Duration, clock: any ServiceClock = SystemClock()) {
        self.adapter = adapter
        loop = PeriodicPass(interval: interval, clock: clock)
    }

    public func start() async throws { loop.start { [self] in await runPass() } }

    public func shutdown() async { await loop.stop() }

    /// One reconciliation pass; failures are logged and left for the next pass. The pass is
    /// counted as completed when every step of it could list and pull what it needed.
    public func runPass() async {
        var completed = await retryInbox()
        for package in adapter.catalog.packages.sorted() { completed = await applyVoided(package) && completed }
        completed = await refreshAtRisk() && completed
        adapter.counters.reconciliation.pass(completed: completed)
    }

    @discardableResult
    func retryInbox() async -> Bool {
        do {
            try await ReconcilerPaging.staleInbox(
                adapter.ledger, store: .google, now: adapter.nowMilliseconds, pendingGrace: Self.pendingGrace,
                limit: Self.maxPerStep
            ) { entry in
                if entry.notificationType == GoogleAdapter.acknowledgeType {
                    await retryAcknowledgement(entry)
                } else if let (package, eventTime, work) = GoogleAdapter.work(from: entry) {
                    await adapter.process(
                        messageID: entry.notificationID, packageName: package, eventTime: eventTime,
                        published: entry.signedTimeMilliseconds ?? eventTime, work: work)
                }
            }
        } catch {
            adapter.logger.warning("google reconciliation cannot list the inbox", ["error": "\(error)"])
            return false
        }
        return true
    }

    func retryAcknowledgement(_ entry: InboxEntry) async {
        do {
            guard let key = entry.key, let subscription = try await adapter.ledger.subscription(key) else { return }
            if !subscription.acknowledged {
                _ = try await adapter.acknowledge(subscription, packageName: subscription.bundleOrPackage)
            }
            _ = try await adapter.ledger.markInbox(
                MarkInboxRequest(store: .google, notificationID: entry.notificationID, status: .processed))
        } catch {
            _ = try? await adapter.ledger.markInbox(
                MarkInboxRequest(
                    store: .google, notificationID: entry.notificationID, status: .failed,
                    error: String("\(error)".prefix(2000))))
        }
    }

    @discardableResult
    func applyVoided(_ package: String) async -> Bool {
        do {
            try await ReconcilerPaging.sinceCursor(
                adapter.ledger, "google-voided-\(package)", now: adapter.nowMilliseconds, overlap: Self.voidedOverlap,
                firstLookback: Self.firstLookback, maxLookback: Self.firstLookback
            ) { start, end in
                for purchase in try await adapter.api.voidedPurchases(packageName: package, start: start, end: end) {
                    guard let token = purchase.purchaseToken, let orderID = purchase.orderId,
                        let time = purchase.voidedTimeMillis.flatMap({ Int64($0) })
                    else { continue }
                    let revoked = try await adapter.void(
                        GoogleAdapter.VoidedOrder(
                            token: token, orderID: orderID, time: time, partial: purchase.voidedQuantity != nil,
                            voidedQuantity: purchase.voidedQuantity, raw: purchase.raw),
                        notificationID: nil)
                    if revoked {
                        // No VOIDED_PURCHASE notification had revoked it.
                        adapter.counters.reconciliation.voidedFound.increment()
                        adapter.counters.reconciliation.discovered.increment()
                    }
                }
            } onGap: { skipped in
                adapter.counters.voidedGaps.increment()
                adapter.logger.warning(
                    "voided purchases older than Google lists were not pulled; reconcile them by hand",
                    ["package": package, "gap_ms": "\(skipped)"])
            }
        } catch {
            adapter.logger.warning("google voided purchases not applied", ["package": package, "error": "\(error)"])
            return false
        }
        return true
    }

    @discardableResult
    func refreshAtRisk() async -> Bool {
        let now = adapter.nowMilliseconds
        var queries = [SubscriptionState.gracePeriod, .accountHold, .paused, .pending].map {
            ListSubscriptionsRequest(store: .google, state: $0)
        }
        queries.append(
            ListSubscriptionsRequest(
                store: .google, expiresAfterMilliseconds: now - Self.riskWindow,
                expiresBeforeMilliseconds: now + Self.riskWindow))
        do {
            try await ReconcilerPaging.eachSubscription(adapter.ledger, matching: queries, limit: Self.maxPerStep) {
                subscription in
                guard subscription.state != .revoked else { return }
                do {
                    let refreshed = try await adapter.refresh(subscription.key)
                    adapter.counters.reconciliation.refreshed(changed: refreshed.changed)
                } catch {
                    adapter.logger.warning(
                        "google purchase not refreshed",
                        ["token_prefix": String(subscription.key.storeID.prefix(12)), "error": "\(error)"])
                }
            }
        } catch {
            adapter.logger.warning("google reconciliation cannot list purchases", ["error": "\(error)"])
            return false
        }
        return true
    }
}
