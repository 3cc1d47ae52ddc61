import Foundation
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
    let client: any ClientTransport
    let logger: Logger
    let policies: PolicyStore?
    let now: @Sendable () -> Int64
    /// Told each change applied, when this instance may compute the event log.
    let publisher: EventPublisher?
    /// Where the view starts from when it has one, before any snapshot.
    let checkpoint: ViewCheckpoint?
    /// Told the position of a checkpoint the view started from.
    let checkpointService: ViewCheckpointService?
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let position: Gauge
    private let lagPositions: Gauge
    private let lagSeconds: Gauge
    private let appliedChanges: Counter

    public init(
        view: EntitlementView, client: any ClientTransport, logger: Logger, metrics: MetricsRegistry? = nil,
        policies: PolicyStore? = nil, publisher: EventPublisher? = nil, checkpoint: ViewCheckpoint? = nil,
        checkpointService: ViewCheckpointService? = nil,
        now: (@Sendable () -> Int64)? = nil
    ) {
        self.publisher = publisher
        self.checkpoint = checkpoint
        self.checkpointService = checkpointService
        self.view = view
        self.client = client
        self.logger = logger
        self.policies = policies
        // Unless told otherwise, the logger's clock: the service's.
        self.now = now ?? { [clock = logger.clock] in clock.epochMilliseconds() }
        position =
            metrics?.gauge("entitlement_feed_position", help: "The ledger change-feed position the view reflects.")
            ?? Gauge()
        lagSeconds =
            metrics?.gauge(
                "entitlement_feed_lag_seconds",
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
            try? await logger.clock.sleep(for: .seconds(1))
        }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }

    /// Checkpoint or snapshot, then follow; on any failure wait a little and go on from the
    /// view's position.
    func follow() async {
        var backoff: Duration = .milliseconds(100)
        await loadCheckpoint()
        while !Task.isCancelled {
            do {
                if view.position == nil { try await loadSnapshot() }
                try await watch()
                backoff = .milliseconds(100)
            } catch let error where Self.isPositionMissing(error) {
                logger.warning(
                    "the ledger does not have the view's position; taking a new snapshot", ["error": "\(error)"])
                try? await loadSnapshot()
            } catch {
                if Task.isCancelled { return }
                logger.warning("ledger feed interrupted; resuming", ["error": "\(error)"])
                try? await logger.clock.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    /// Puts the checkpoint in force, if there is a whole one; the feed then goes on from its
    /// position (and a ledger that does not have that change takes the view to a snapshot).
    func loadCheckpoint() async {
        guard let checkpoint, view.position == nil else { return }
        let started = logger.clock.nanoseconds()
        let result: Result<CheckpointSummary?, CheckpointError> = await withCheckedContinuation { continuation in
            // Seconds of reading at millions of accounts: not on a worker of the pool.
            Thread.detachNewThread {
                let supply = BlockSupply.start()
                let result = Result { () throws(CheckpointError) in try checkpoint.load(into: self.view) }
                supply.stop()
                continuation.resume(returning: result)
            }
        }
        switch result {
        case .success(nil):
            logger.info("no checkpoint; taking a snapshot", ["path": checkpoint.path])
        case .success(let summary?):
            let elapsed = Duration.nanoseconds(Int64(clamping: logger.clock.nanoseconds() - started))
            await publisher?.viewReplaced()
            checkpointService?.loaded(at: summary.position)
            position.set(Int(summary.position))
            let policy = policies?.policy.version ?? ""
            logger.info(
                "checkpoint loaded",
                [
                    "position": "\(summary.position)", "subscriptions": "\(summary.subscriptions)",
                    "bytes": "\(summary.bytes)",
                    "ms":
                        "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)",
                    "policy": summary.policyVersion,
                ])
            if summary.policyVersion != policy {
                logger.info(
                    "the policy changed since the checkpoint; capabilities are worked out under the one in force",
                    ["checkpoint_policy": summary.policyVersion, "policy": policy])
            }
            view.warnAboutUndatedNonRenewingProducts(policy: policies?.policy, logger: logger)
        case .failure(let error):
            logger.warning(
                "checkpoint not usable; taking a snapshot", ["path": checkpoint.path, "error": error.description])
        }
    }

    func loadSnapshot() async throws {
        // The view's new memory is made resident on another thread while this one fills it.
        let supply = BlockSupply.start()
        defer { supply.stop() }
        let stream = client.serverStream(LedgerRPC.snapshot, SnapshotRequest(statesOnly: true))
        var builder = EntitlementView.Builder()
        var count = 0
        for try await message in stream {
            let chunk = try message.withUnsafeBytes { bytes throws(ViewError) in try builder.add(chunk: bytes) }
            count += chunk.subscriptions
            if chunk.complete {
                view.install(builder, position: chunk.position, committed: chunk.positionCommitted)
                await publisher?.viewReplaced()
                position.set(Int(chunk.position))
                logger.info(
                    "snapshot loaded", ["subscriptions": "\(count)", "position": "\(chunk.position)"])
                view.warnAboutUndatedNonRenewingProducts(policy: policies?.policy, logger: logger)
                return
            }
        }
        throw ViewError(.feedEnded, "the snapshot ended without its last chunk")
    }

    /// Follows the feed from the change at the view's position, sent again: it names the feed
    /// the view was made from (`EntitlementView.confirm`).
    func watch() async throws {
        guard let current = view.position else { return }
        let stream = client.serverStream(
            LedgerRPC.watchChanges, WatchChangesRequest(after: current > 0 ? current - 1 : 0))
        for try await message in stream {
            let change = try Change(serialized: message)
            if change.position <= current {
                guard view.confirm(position: change.position, committed: change.committedTimeMilliseconds ?? 0) else {
                    view.forgetPosition()
                    throw ViewError(
                        .feedMismatch,
                        "the ledger's change at position \(change.position) is not the one the view applied")
                }
                continue
            }
            // Who held the subscription before, for the access events of a transfer.
            let previous = publisher == nil ? nil : change.subscription.flatMap { view.holder(of: $0.key) }
            if view.apply(
                position: change.position, subscription: change.subscription,
                committed: change.committedTimeMilliseconds ?? 0)
            {
                appliedChanges.increment()
                await publisher?.observe(change, previousHolder: previous)
            }
            position.set(Int(change.position))
            lagSeconds.set(milliseconds: max(0, now() - (change.committedTimeMilliseconds ?? now())))
        }
        throw ViewError(.feedEnded, "the ledger ended the change feed")
    }

    /// Whether `error` says the ledger does not have the view's position: the ledger refused to
    /// resume there, or its change at that position is not the one the view applied.
    static func isPositionMissing(_ error: any Error) -> Bool {
        if let error = error as? RPCError { return error.code == .failedPrecondition }
        return (error as? ViewError)?.code == .feedMismatch
    }
}
