import Dispatch
import Glibc
import Synchronization

/// What must be undone when the run is interrupted (SIGINT, SIGTERM, SIGHUP): the processes
/// and directories it made register a cleanup while they exist; the signal runs them all,
/// newest first, and exits with 128 + the signal number. The normal path unregisters them.
public enum Interruption {
    private static let cleanups = Mutex<(next: Int, actions: [Int: @Sendable () -> Void])>((0, [:]))
    private nonisolated(unsafe) static var sources: [any DispatchSourceSignal] = []  // set once, by install()

    /// Takes over SIGINT, SIGTERM and SIGHUP. Call once, at start, from the main thread.
    public static func install() {
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let actions = cleanups.withLock { state in state.actions.sorted { $0.key > $1.key }.map(\.value) }
                for action in actions { action() }
                exit(128 + number)
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Registers `action`; returns the token that `remove` takes.
    public static func add(_ action: @escaping @Sendable () -> Void) -> Int {
        cleanups.withLock { state in
            state.next += 1
            state.actions[state.next] = action
            return state.next
        }
    }

    public static func remove(_ token: Int) { _ = cleanups.withLock { $0.actions.removeValue(forKey: token) } }
}
