import AppStore
import Foundation
public import Lifecycle
import Model
import Observability
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

    public init(adapter: AppleAdapter, interval: Duration) {
        self.adapter = adapter
        loop = PeriodicPass(interval: interval)
    }

    public func start() async throws { loop.start { [self] in await runPass() } }

    public func shutdown() async { await loop.stop() }

    /// One reconciliation pass; failures are logged and left for the next pass.
    public func runPass() async {
        await retryInbox()
        for environment in adapter.verifiers.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            await pullHistory(environment)
        }
        await refreshAtRisk()
    }

    func retryInbox() async {
        var token: String?
        var handled = 0
        repeat {
            let page: ListInboxResponse
            do {
                page = try await adapter.ledger.listInbox(ListInboxRequest(store: .apple, pageToken: token))
            } catch {
                adapter.logger.warning("apple reconciliation cannot list the inbox", ["error": "\(error)"])
                return
            }
            for entry in page.entries where handled < Self.maxPerStep {
                let old = (entry.receivedTimeMilliseconds ?? 0) < adapter.nowMilliseconds - Self.pendingGrace
                guard entry.status == .failed || old else { continue }
                let environment = AppleEnvironment(entry.environment ?? .sandbox)
                handled += 1
                await adapter.process(signedPayload: entry.rawPayload, environment: environment)
            }
            token = page.nextPageToken
        } while token != nil && handled < Self.maxPerStep
    }

    func pullHistory(_ environment: AppleEnvironment) async {
        let name = "apple-notification-history-\(environment.rawValue.lowercased())"
        let end = adapter.nowMilliseconds
        do {
            let cursor = try await adapter.ledger.cursor(name)
            let start = cursor.value > 0 ? cursor.value - Self.historyOverlap : end - Self.firstLookback
            let items = try await adapter.api.notificationHistory(
                start: Date(timeIntervalSince1970: Double(start) / 1000),
                end: Date(timeIntervalSince1970: Double(end) / 1000),
                environment: environment)
            for item in items {
                await adapter.recordFromHistory(item.signedPayload, environment: environment)
            }
            _ = try await adapter.ledger.advanceCursor(name, to: end)
        } catch {
            adapter.logger.warning(
                "apple notification history not pulled", ["environment": environment.rawValue, "error": "\(error)"])
        }
    }

    func refreshAtRisk() async {
        let now = adapter.nowMilliseconds
        let queries = [
            ListSubscriptionsRequest(store: .apple, state: .gracePeriod),
            ListSubscriptionsRequest(store: .apple, state: .billingRetry),
            ListSubscriptionsRequest(
                store: .apple, expiresAfterMilliseconds: now - Self.riskWindow,
                expiresBeforeMilliseconds: now + Self.riskWindow),
        ]
        var seen: Set<SubscriptionKey> = []
        for query in queries {
            var request = query
            repeat {
                let page: ListSubscriptionsResponse
                do {
                    page = try await adapter.ledger.listSubscriptions(request)
                } catch {
                    adapter.logger.warning("apple reconciliation cannot list subscriptions", ["error": "\(error)"])
                    return
                }
                for subscription in page.subscriptions where seen.count < Self.maxPerStep {
                    guard seen.insert(subscription.key).inserted,
                        adapter.verifiers[AppleEnvironment(subscription.key.environment)] != nil
                    else { continue }
                    do {
                        _ = try await adapter.refresh(subscription.key)
                    } catch {
                        adapter.logger.warning(
                            "apple subscription not refreshed", ["key": "\(subscription.key)", "error": "\(error)"])
                    }
                }
                request.pageToken = page.nextPageToken
            } while request.pageToken != nil && seen.count < Self.maxPerStep
        }
    }
}
