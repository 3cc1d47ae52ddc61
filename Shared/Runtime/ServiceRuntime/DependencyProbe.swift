import Config
public import Lifecycle
public import Observability
public import RPC
import Synchronization
import Wire

/// Asks another service's `Health` method at a fixed interval and remembers whether the last
/// answer was SERVING. A service's readiness depends on the services it cannot work without.
public final class DependencyProbe: LifecycleService {
    public let name: String
    private let client: any ClientTransport
    private let method: String
    private let interval: Duration
    private let logger: Logger
    private let healthy = Atomic<Bool>(false)
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Probes `method` (a `…/Health` method) through `client` every `interval` of the logger's time.
    public init(
        name: String, client: any ClientTransport, healthMethod method: String, interval: Duration = .seconds(2),
        logger: Logger
    ) {
        self.name = name
        self.client = client
        self.method = method
        self.interval = interval
        self.logger = logger
    }

    /// True when the last probe got SERVING.
    public var isHealthy: Bool { healthy.load(ordering: .relaxed) }

    public func start() async throws {
        await probe()
        let loop = Task { [self] in
            while !Task.isCancelled {
                // Until the dependency answers, look again soon.
                try? await logger.clock.sleep(for: isHealthy ? interval : min(interval, .milliseconds(200)))
                if Task.isCancelled { break }
                await probe()
            }
        }
        task.withLock { $0 = loop }
    }

    public func shutdown() async {
        let running = task.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
    }

    private func probe() async {
        let wasHealthy = isHealthy
        do {
            let response = try await client.call(
                UnaryMethod<HealthRequest, HealthResponse>(method), HealthRequest(), timeout: .seconds(1))
            healthy.store(response.status == .serving, ordering: .relaxed)
        } catch {
            healthy.store(false, ordering: .relaxed)
            if wasHealthy {
                logger.warning("dependency unavailable", ["dependency": name, "error": error.description])
            }
            return
        }
        if !wasHealthy && isHealthy { logger.info("dependency available", ["dependency": name]) }
    }
}
