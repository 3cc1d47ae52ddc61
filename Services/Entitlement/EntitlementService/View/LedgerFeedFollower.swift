public import Foundation
public import Lifecycle
import Model
public import Observability
public import RPC
import Synchronization
import Wire

/// Keeps an `EntitlementView` equal to the ledger: a snapshot first, then the change feed from
/// the snapshot's position. After a ledger restart or a cut connection it resumes where the view
/// is, so no change is missed or applied twice; when the ledger no longer has that position (a
/// restored backup, another database) it takes a new snapshot.
public final class LedgerFeedFollower: LifecycleService {
    public let name = "ledger-feed"

    let view: EntitlementView
    let client: RPCClient
    let logger: Logger
    let policies: PolicyStore?
    let now: @Sendable () -> Int64
    /// Told each change applied, when this instance may compute the event log.
    let publisher: EventPublisher?
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let position: Gauge
    private let lagPositions: Gauge
    private let lagMilliseconds: Gauge
    private let appliedChanges: Counter

    public init(
        view: EntitlementView, client: RPCClient, logger: Logger, metrics: MetricsRegistry? = nil,
        policies: PolicyStore? = nil, publisher: EventPublisher? = nil,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) {
        self.publisher = publisher
        self.view = view
        self.client = client
        self.logger = logger
        self.policies = policies
        self.now = now
        position =
            metrics?.gauge("entitlement_feed_position", help: "The ledger change-feed position the view reflects.")
            ?? Gauge()
        lagMilliseconds =
            metrics?.gauge(
                "entitlement_feed_lag_milliseconds",
                help: "How long after its commit the newest change reached the view.")
            ?? Gauge()
        appliedChanges =
            metrics?.counter("entitlement_feed_changes_total", help: "Changes applied to the view.") ?? Counter()
        lagPositions =
            metrics?.gauge(
                "entitlement_feed_lag_positions",
                help: "Changes the ledger has that the view has not applied (sampled each second).") ?? Gauge()
    }

    public func start() async throws {
        let running = Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.follow() }
                group.addTask { await self.sampleLag() }
            }
        }
        task.withLock { $0 = running }
    }

    /// Every second: how many positions the ledger is ahead of the view.
    func sampleLag() async {
        while !Task.isCancelled {
            if let newest = try? await client.call(LedgerRPC.getFeedPosition, GetFeedPositionRequest()).position,
                let current = view.position
            {
                lagPositions.set(Int(newest > current ? newest - current : 0))
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }

    /// Snapshot, then follow; on any failure wait a little and go on from the view's position.
    func follow() async {
        var backoff: Duration = .milliseconds(100)
        while !Task.isCancelled {
            do {
                if view.position == nil { try await loadSnapshot() }
                try await watch()
                backoff = .milliseconds(100)
            } catch let error as RPCError where error.code == .failedPrecondition {
                logger.warning(
                    "the ledger does not have the view's position; taking a new snapshot", ["error": "\(error)"])
                try? await loadSnapshot()
            } catch {
                if Task.isCancelled { return }
                logger.warning("ledger feed interrupted; resuming", ["error": "\(error)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    func loadSnapshot() async throws {
        let stream = client.serverStream(LedgerRPC.snapshot, SnapshotRequest())
        var builder = EntitlementView.Builder()
        var count = 0
        for try await message in stream {
            let chunk = try message.withUnsafeBytes { bytes throws(RPCError) in try builder.add(chunk: bytes) }
            count += chunk.subscriptions
            if chunk.complete {
                view.install(builder, position: chunk.position)
                await publisher?.viewReplaced()
                position.set(Int(chunk.position))
                logger.info(
                    "snapshot loaded", ["subscriptions": "\(count)", "position": "\(chunk.position)"])
                view.warnAboutUndatedNonRenewingProducts(policy: policies?.policy, logger: logger)
                return
            }
        }
        throw RPCError(.unavailable, "the snapshot ended without its last chunk")
    }

    func watch() async throws {
        guard let after = view.position else { return }
        let stream = client.serverStream(LedgerRPC.watchChanges, WatchChangesRequest(after: after))
        for try await message in stream {
            let change = try Change(serialized: message)
            // Who held the subscription before, for the access events of a transfer.
            let previous = publisher == nil ? nil : change.subscription.flatMap { view.holder(of: $0.key) }
            if view.apply(
                position: change.position,
                subscription: change.subscription)
            {
                appliedChanges.increment()
                await publisher?.observe(change, previousHolder: previous)
            }
            position.set(Int(change.position))
            lagMilliseconds.set(Int(max(0, now() - (change.committedTimeMilliseconds ?? now()))))
        }
        throw RPCError(.unavailable, "the ledger ended the change feed")
    }
}
