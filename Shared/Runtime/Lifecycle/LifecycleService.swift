/// A long-running part of a process: started in order, stopped in reverse order.
public protocol LifecycleService: Sendable {
    /// A short name for logs.
    var name: String { get }
    /// Starts the work and returns once it is running. Throwing aborts the process start.
    func start() async throws
    /// Stops the work, letting what is in flight finish within the service's own bound.
    func shutdown() async
}

/// Runs services until a shutdown signal, then drains them in reverse start order.
public struct ServiceGroup: Sendable {
    private let services: [any LifecycleService]
    private let signal: ShutdownSignal
    private let log: @Sendable (String, [String: String]) -> Void
    private let onStarted: @Sendable () -> Void

    /// `onStarted` runs once every service has started.
    public init(
        services: [any LifecycleService], signal: ShutdownSignal,
        log: @escaping @Sendable (String, [String: String]) -> Void = { _, _ in },
        onStarted: @escaping @Sendable () -> Void = {}
    ) {
        self.services = services
        self.signal = signal
        self.log = log
        self.onStarted = onStarted
    }

    /// Starts every service, waits for the signal, stops them all. When a start fails, the
    /// services already started are stopped and the error is rethrown.
    public func run() async throws {
        var started: [any LifecycleService] = []
        do {
            for service in services {
                try await service.start()
                started.append(service)
                log("started", ["part": service.name])
            }
        } catch {
            for service in started.reversed() { await service.shutdown() }
            throw error
        }
        onStarted()
        let reason = await signal.wait()
        log("shutting down", ["reason": reason])
        for service in started.reversed() {
            await service.shutdown()
            log("stopped", ["part": service.name])
        }
    }
}
