import Config
public import Sockets

/// How `health`, `call` and the ledger commands reach a service and print its answer.
public struct CallOptions: Sendable, Equatable {
    /// The files of mutual TLS: this client's certificate and key, and the CA that signed the server's.
    public struct TLSFiles: Sendable, Equatable {
        public var certificatePath: String
        public var keyPath: String
        public var caPath: String

        public init(certificatePath: String, keyPath: String, caPath: String) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
            self.caPath = caPath
        }
    }

    /// The deadline when `--timeout` is not given (server streams have none).
    public static let defaultTimeout: Duration = .seconds(5)

    /// `--addr`.
    public var address: HostPort
    /// `--timeout`, or `defaultTimeout`; nil for a server stream without `--timeout`.
    public var timeout: Duration?
    /// `--json`: compact one-line JSON instead of human output.
    public var json: Bool
    /// `--tls-cert`, `--tls-key` and `--tls-ca`; nil for plain TCP.
    public var tls: TLSFiles?

    public init(address: HostPort, timeout: Duration?, json: Bool = false, tls: TLSFiles? = nil) {
        self.address = address
        self.timeout = timeout
        self.json = json
        self.tls = tls
    }
}
