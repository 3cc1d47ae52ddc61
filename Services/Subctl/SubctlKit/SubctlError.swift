public import AppStore
public import Wire

/// Why a subctl command failed: a code, printed as `CODE`, and a message for the operator.
///
/// Usage, lookup, request-JSON and input-file problems exit with 2; errors a server or the
/// connection reported, answers that cannot be decoded, and output cut short exit with 1; an
/// event log that `events verify` finds wanting exits with 3; App Store data that `apple verify`
/// refuses exits with its refusal's own status (10…17).
public struct SubctlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure: an extensible set of subctl's own codes plus every RPC status.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable {
            case usage, notFound, invalidArgument, dataLoss, incomplete, inconsistent
            case rpc(StatusCode)
            case refused(AppleVerificationError.Code)
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The command line is malformed: unknown command, option or a bad option value.
        public static let usage = Code(.usage)
        /// No method, message or enum has the given name.
        public static let notFound = Code(.notFound)
        /// The request JSON does not fit the message, a name is ambiguous, or an input file (a
        /// JWS, a trust anchor) cannot be read.
        public static let invalidArgument = Code(.invalidArgument)
        /// An answer's bytes are not the message its method returns.
        public static let dataLoss = Code(.dataLoss)
        /// The answers were good but not all were read: `history --all` stopped at its page cap.
        public static let incomplete = Code(.incomplete)
        /// The answers were read in full and disagree with each other: `events verify` found
        /// lifecycle events of the feed missing from the event log, logged twice, or logged
        /// where the feed gives none.
        public static let inconsistent = Code(.inconsistent)
        /// The status of a failed call.
        public static func rpc(_ status: StatusCode) -> Code { Code(.rpc(status)) }

        /// The RPC status, when the code is one.
        public var status: StatusCode? {
            if case .rpc(let status) = base { return status }
            return nil
        }
        /// App Store signed data that `apple verify` refused, with the verifier's reason.
        public static func refused(_ code: AppleVerificationError.Code) -> Code { Code(.refused(code)) }

        /// `USAGE`, `NOT_FOUND`, `INVALID_ARGUMENT`, `DATA_LOSS`, `INCOMPLETE`, `INCONSISTENT`, the
        /// call's status name, or a refusal's code in capitals (`BAD_SIGNATURE`).
        public var name: String {
            switch base {
            case .usage: "USAGE"
            case .notFound: "NOT_FOUND"
            case .invalidArgument: "INVALID_ARGUMENT"
            case .dataLoss: "DATA_LOSS"
            case .incomplete: "INCOMPLETE"
            case .inconsistent: "INCONSISTENT"
            case .rpc(let status): status.name
            case .refused(let code): code.description.uppercased()
            }
        }

        /// The process exit status for this code: 2 for what the operator typed, 3 for an
        /// inconsistent event log, a refusal's own status (`AppleCommand.exitCodes`), 1 otherwise.
        public var exitCode: Int32 {
            switch base {
            case .usage, .notFound, .invalidArgument: 2
            case .dataLoss, .incomplete, .rpc: 1
            case .inconsistent: 3
            case .refused(let code): AppleCommand.exitCode(for: code)
            }
        }

        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The error of a failed call, keeping its status and message.
    public init(_ error: RPCError) {
        self.init(.rpc(error.code), error.message + Self.wrongServiceHint(error))
    }

    /// For a method the service does not know (`unknown method "subscriptions.ledger.v1.Ledger/…"`),
    /// which service serves it: `--addr` most likely names another one.
    static func wrongServiceHint(_ error: RPCError) -> String {
        guard error.code == .unimplemented, error.message.hasPrefix("unknown method \""),
            let service = error.message.split(separator: "/").first?.split(separator: ".").last
        else { return "" }
        let name: String
        switch service {
        case "Ledger": name = "ledger"
        case "Verifier": name = "verifier"
        case "Entitlement": name = "entitlement service"
        default: return ""
        }
        return "; the \(name) serves it: is --addr the \(name)'s address?"
    }

    /// `CODE: message`; printed after `error: `.
    public var description: String { message.isEmpty ? code.name : "\(code.name): \(message)" }
}
