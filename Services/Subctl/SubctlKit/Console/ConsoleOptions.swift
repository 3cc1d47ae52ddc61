public import Sockets

/// `subctl console`'s command line: where the console listens, the three services it calls and
/// how (the operator's mutual TLS files), the App Store roots payloads are verified against,
/// and whether pages need the printed login address.
public struct ConsoleOptions: Sendable, Equatable {
    /// `--listen HOST:PORT` (port 0: any free port).
    public var listen: HostPort
    /// `--ledger`, `--verifier`, `--entitlement` with the TLS files and `--timeout`.
    public var ledger: CallOptions
    public var verifier: CallOptions
    public var entitlement: CallOptions
    /// `--apple-root`, in the order given: PEM (or DER) files of App Store trust anchors.
    public var appleRoots: [String]
    /// False with `--no-login`: every visitor gets a session (behind a team's authenticating proxy).
    public var login: Bool
    /// `--origin`: the address a proxy serves the console under, taken in `Host` and `Origin`
    /// beside the listen address.
    public var origin: ConsoleOrigin?

    public init(
        listen: HostPort, ledger: CallOptions, verifier: CallOptions, entitlement: CallOptions,
        appleRoots: [String] = [], login: Bool = true, origin: ConsoleOrigin? = nil
    ) {
        self.origin = origin
        self.listen = listen
        self.ledger = ledger
        self.verifier = verifier
        self.entitlement = entitlement
        self.appleRoots = appleRoots
        self.login = login
    }

    /// The services' addresses when not given.
    static let defaultLedger = HostPort(host: "127.0.0.1", port: 7002)
    static let defaultVerifier = HostPort(host: "127.0.0.1", port: 7001)
    static let defaultEntitlement = HostPort(host: "127.0.0.1", port: 7003)
}
