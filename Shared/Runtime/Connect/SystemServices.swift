/// The services of this system as a caller finds them: each proto service with the name of the
/// service that serves it and the ports its listeners take by default (`RPC_LISTEN`,
/// `HTTP_LISTEN`). What the HTTP listener says to a call that came to the wrong one.
public enum SystemServices {
    /// One service of the system.
    public struct Entry: Sendable, Equatable {
        /// The proto service's full name, e.g. `subscriptions.ledger.v1.Ledger`.
        public let protoService: String
        /// The service's name, as it logs it (`ledger`).
        public let name: String
        /// The port of its framed-protocol listener by default.
        public let rpcPort: Int
        /// The port of its HTTP listener by default.
        public let httpPort: Int
    }

    /// The verifier, the ledger and the entitlement service.
    public static let all = [
        Entry(protoService: "subscriptions.verifier.v1.Verifier", name: "verifier", rpcPort: 7001, httpPort: 8001),
        Entry(protoService: "subscriptions.ledger.v1.Ledger", name: "ledger", rpcPort: 7002, httpPort: 8002),
        Entry(
            protoService: "subscriptions.entitlement.v1.Entitlement", name: "entitlement", rpcPort: 7003,
            httpPort: 8003),
    ]

    /// The entry of the proto service `fullName`, nil for one that is not this system's.
    public static func entry(serving fullName: some StringProtocol) -> Entry? {
        all.first { $0.protoService == fullName }
    }
}
