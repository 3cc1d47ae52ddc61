public import Config
import Foundation
public import Lifecycle
import Observability

/// The body of every service's `main.swift`: build the service from the environment, run it,
/// and turn failures into a message and an exit status (2 for configuration, 1 otherwise).
public enum ServiceMain {
    public static func run(_ name: String, _ build: (EnvironmentReader, ShutdownSignal) async throws -> ServiceHost)
        async
        -> Never
    {
        let signal = ShutdownSignal.installed()
        let host: ServiceHost
        do {
            host = try await build(EnvironmentReader(), signal)
        } catch let error as ConfigError {
            FileHandle.standardError.write(Data("\(name): configuration error: \(error)\n".utf8))
            exit(2)
        } catch {
            FileHandle.standardError.write(Data("\(name): cannot start: \(error)\n".utf8))
            exit(1)
        }
        do {
            try await host.run()
            exit(0)
        } catch {
            host.logger.error("failed", ["error": "\(error)"])
            exit(1)
        }
    }
}
