import Foundation
import Glibc
public import Lifecycle
public import Observability
import Synchronization

/// What a checkpoint held, or what writing one did.
public struct CheckpointSummary: Sendable, Equatable {
    /// The feed position the view had.
    public var position: UInt64
    public var accounts: Int
    public var subscriptions: Int
    /// The version line of the policy in force when it was written ("" for none).
    public var policyVersion: String
    /// When it was written, Unix epoch milliseconds.
    public var writtenMilliseconds: Int64
    public var bytes: Int
}

/// The view's checkpoint on local disk: the tables as they sit in memory, the feed position
/// they reflect (with that change's commit time) and the policy version, behind a header and
/// ahead of a checksum. Written to a temporary file of its own beside it (named by the process
/// and a random number), synced and renamed, so that the file at `path` is always a whole
/// checkpoint (or absent) — also when instances share the folder: any whole checkpoint of the
/// same ledger is one an instance can start from.
public struct ViewCheckpoint: Sendable {
    /// "SUBVIEW" and the format's version.
    static let magic: UInt64 = 0x5745_4956_4255_53
    static let formatVersion: UInt64 = 2

    public let path: String

    public init(path: String) { self.path = path }

    /// Writes the view as it is now; nil (writing nothing) before its first snapshot. The view's
    /// feed waits while the tables are copied to the file (readers do not); the sync happens
    /// after.
    @discardableResult
    public func write(_ view: EntitlementView, policyVersion: String, now: Int64) throws(CheckpointError)
        -> CheckpointSummary?
    {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var writer = try CheckpointWriter(path: temporary)
        writer.integer(Self.magic)
        writer.integer(Self.formatVersion)
        writer.string(policyVersion)
        writer.integer(now)
        let outcome: Result<(position: UInt64, accounts: Int, subscriptions: Int)?, CheckpointError> = view.lock.read {
            _ in
            guard let position = view.tables.position else { return .success(nil) }
            do throws(CheckpointError) {
                try view.tables.write(to: &writer)
            } catch {
                return .failure(error)
            }
            return .success((position, view.tables.accountsHolding, view.tables.held))
        }
        let written: (position: UInt64, accounts: Int, subscriptions: Int)?
        do throws(CheckpointError) { written = try outcome.get() } catch {
            unlink(temporary)
            throw error
        }
        guard let written else {
            unlink(temporary)
            return nil
        }
        do throws(CheckpointError) {
            try writer.finish()
            guard rename(temporary, path) == 0 else { throw .system("renaming to", path) }
        } catch {
            unlink(temporary)
            throw error
        }
        let bytes = writer.bytesWritten
        // The rename is durable once the directory is synced.
        let folder = (path as NSString).deletingLastPathComponent
        let directory = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        return CheckpointSummary(
            position: written.position, accounts: written.accounts, subscriptions: written.subscriptions,
            policyVersion: policyVersion, writtenMilliseconds: now, bytes: bytes)
    }

    /// Reads the checkpoint, checks it whole, and puts it in force in `view`; nil when there is
    /// no checkpoint. Throws, changing nothing, for a file that is not a whole checkpoint of
    /// this build's format.
    public func load(into view: EntitlementView) throws(CheckpointError) -> CheckpointSummary? {
        guard var reader = try CheckpointReader(path: path) else { return nil }
        guard try reader.integer() == Self.magic else { throw CheckpointError("\(path) is not a view checkpoint") }
        let version = try reader.integer()
        guard version == Self.formatVersion else {
            throw CheckpointError("\(path) has format \(version); this build reads \(Self.formatVersion)")
        }
        let policyVersion = try reader.string()
        let written = try reader.signed()
        let tables = try ViewTables.read(from: &reader)
        let summary = CheckpointSummary(
            position: tables.position ?? 0, accounts: tables.accountsHolding, subscriptions: tables.held,
            policyVersion: policyVersion, writtenMilliseconds: written, bytes: reader.bytesRead)
        view.lock.write { _ in view.tables.exchange(with: tables) }
        return summary
    }
}

/// Writes the view's checkpoint every `interval` when the view moved, and once more at shutdown
/// (after the feed has stopped: it is added before the feed follower, so it stops after it).
public final class ViewCheckpointService: LifecycleService {
    public let name = "view-checkpoint"

    let checkpoint: ViewCheckpoint
    let view: EntitlementView
    let interval: Duration
    let policyVersion: @Sendable () -> String
    let logger: Logger
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let lastWritten = Mutex<UInt64?>(nil)
    private let writes: Counter
    private let failures: Counter
    private let seconds: Gauge
    private let bytes: Gauge

    public init(
        checkpoint: ViewCheckpoint, view: EntitlementView, interval: Duration,
        policyVersion: @escaping @Sendable () -> String, logger: Logger, metrics: MetricsRegistry? = nil
    ) {
        self.checkpoint = checkpoint
        self.view = view
        self.interval = interval
        self.policyVersion = policyVersion
        self.logger = logger
        writes = metrics?.counter("entitlement_checkpoints_total", help: "View checkpoints written.") ?? Counter()
        failures =
            metrics?.counter("entitlement_checkpoint_failures_total", help: "View checkpoints that failed to write.")
            ?? Counter()
        seconds =
            metrics?.gauge(
                "entitlement_checkpoint_write_seconds", help: "How long the last checkpoint took to write.")
            ?? Gauge()
        bytes = metrics?.gauge("entitlement_checkpoint_bytes", help: "The size of the last checkpoint.") ?? Gauge()
    }

    /// Tells the service the view came from the checkpoint at `position` (no need to write it
    /// again until the view moves).
    public func loaded(at position: UInt64) { lastWritten.withLock { $0 = position } }

    public func start() async throws {
        let running = Task { [self] in
            while !Task.isCancelled {
                try? await logger.clock.sleep(for: interval)
                if Task.isCancelled { break }
                await writeIfMoved()
            }
        }
        task.withLock { $0 = running }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
        await writeIfMoved()
    }

    /// Writes a checkpoint when the view's position is not the last one written; on a thread of
    /// its own, so that the file's I/O does not hold a worker of the concurrency pool.
    func writeIfMoved() async {
        guard let position = view.position, position != lastWritten.withLock({ $0 }) else { return }
        let checkpoint = checkpoint
        let view = view
        let version = policyVersion()
        let written = logger.clock.epochMilliseconds()
        let started = logger.clock.nanoseconds()
        let result: Result<CheckpointSummary?, CheckpointError> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    returning: Result { () throws(CheckpointError) in
                        try checkpoint.write(
                            view, policyVersion: version, now: written)
                    })
            }
        }
        let elapsed = Duration.nanoseconds(Int64(clamping: logger.clock.nanoseconds() - started))
        let milliseconds = Int(
            elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        switch result {
        case .success(let summary?):
            lastWritten.withLock { $0 = summary.position }
            writes.increment()
            seconds.set(milliseconds: Int64(milliseconds))
            bytes.set(summary.bytes)
            logger.info(
                "checkpoint written",
                [
                    "position": "\(summary.position)", "accounts": "\(summary.accounts)", "bytes": "\(summary.bytes)",
                    "ms": "\(milliseconds)", "path": checkpoint.path,
                ])
        case .success(nil):
            break
        case .failure(let error):
            failures.increment()
            logger.error("checkpoint not written", ["error": error.description, "path": checkpoint.path])
        }
    }
}
