/// Why an `HTTPServer` could not start. The message names the address and the cause, e.g.
/// `cannot listen on 127.0.0.1:8080: address in use`.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What kind of failure this is; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case invalidAddress = "invalid address"
            case cannotListen = "cannot listen"
            case alreadyStarted = "already started"
            case badTLSFile = "bad TLS file"
        }

        private let value: Value

        /// The host did not resolve, or the port is outside 0...65535.
        public static let invalidAddress = Code(value: .invalidAddress)
        /// libmicrohttpd could not bind or listen on the address, e.g. because it is in use.
        public static let cannotListen = Code(value: .cannotListen)
        /// `start()` was called on a server that is running.
        public static let alreadyStarted = Code(value: .alreadyStarted)
        /// A TLS key, certificate or CA file cannot be read.
        public static let badTLSFile = Code(value: .badTLSFile)

        public var description: String { value.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// A message for humans that names the address and the cause.
    public var message: String

    /// An error of kind `code` with `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
