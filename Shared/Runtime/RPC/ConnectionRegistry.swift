import Synchronization

/// Every open connection of a server with its client address, across the event loops: what
/// the acceptor consults to hold the per-address limit and, at the connection cap, to pick the
/// connection to close for the new one. Touched once per accept and per close, never per call.
final class ConnectionRegistry: Sendable {
    /// What becomes of a connection being accepted.
    enum Admission {
        case admitted
        /// Admitted; `victim` is closed on its loop to make room.
        case admittedEvicting(ServerConnection)
        case refused(reason: String)
    }

    private struct State {
        var connections: [ObjectIdentifier: ServerConnection] = [:]
        var perAddress: [String: Int] = [:]
        /// Connections chosen for closing that have not closed yet (they still count).
        var evicting: Set<ObjectIdentifier> = []
    }

    private let state = Mutex(State())
    let maxConnections: Int
    let maxPerAddress: Int

    init(maxConnections: Int, maxPerAddress: Int) {
        self.maxConnections = maxConnections
        self.maxPerAddress = maxPerAddress
    }

    var count: Int { state.withLock { $0.connections.count } }

    /// Decides on a connection from `address` before it is set up.
    func admission(from address: String) -> Admission {
        state.withLock { state in
            if state.perAddress[address, default: 0] >= maxPerAddress {
                return .refused(reason: "address_limit")
            }
            guard state.connections.count - state.evicting.count >= maxConnections else { return .admitted }
            guard let victim = Self.victim(in: state) else { return .refused(reason: "connection_limit") }
            state.evicting.insert(ObjectIdentifier(victim))
            return .admittedEvicting(victim)
        }
    }

    /// Records an admitted connection.
    func add(_ connection: ServerConnection) {
        state.withLock { state in
            state.connections[ObjectIdentifier(connection)] = connection
            state.perAddress[connection.address, default: 0] += 1
        }
    }

    /// A connection chosen for closing that turned out busy stays, and may be chosen again.
    func spared(_ connection: ServerConnection) {
        _ = state.withLock { $0.evicting.remove(ObjectIdentifier(connection)) }
    }

    /// Forgets a closed connection.
    func remove(_ connection: ServerConnection) {
        state.withLock { state in
            let id = ObjectIdentifier(connection)
            guard state.connections.removeValue(forKey: id) != nil else { return }
            state.evicting.remove(id)
            let left = state.perAddress[connection.address, default: 1] - 1
            state.perAddress[connection.address] = left > 0 ? left : nil
        }
    }

    /// Among connections with no call in flight that are not already being closed: one that
    /// never sent a frame, the oldest first; else the one whose last frame is oldest.
    private static func victim(in state: State) -> ServerConnection? {
        var best: (connection: ServerConnection, silentFirst: Bool, since: UInt64)?
        for (id, connection) in state.connections where !state.evicting.contains(id) {
            guard connection.callsInFlight == 0 else { continue }
            let lastFrame = connection.lastFrameAt
            let silent = lastFrame == 0
            let since = silent ? connection.openedAt : lastFrame
            if let current = best {
                if current.silentFirst && !silent { continue }
                if current.silentFirst == silent && current.since <= since { continue }
            }
            best = (connection, silent, since)
        }
        return best?.connection
    }
}
