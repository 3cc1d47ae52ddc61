import CShims
import Foundation
import Glibc
import Observability
import Wire

/// What a handler knows about the call it serves.
public struct RPCRequestContext: Sendable {
    /// The full method name, e.g. `subscriptions.ledger.v1.Ledger/Health`.
    public let method: String
    /// Monotonic nanoseconds after which the caller no longer waits.
    public let deadline: UInt64
    /// Names from the caller's TLS certificate; empty on plaintext connections.
    public let peerIdentities: [String]
    /// Whether the caller has the read-only role (`RPC_READ_ONLY`): it may call only the methods
    /// that change nothing, and its answers are redacted.
    public let callerReadOnly: Bool
    /// Who makes the call, for an audit trail: its certificate or API key identities, or its
    /// address when it has none.
    public var actor: String {
        peerIdentities.isEmpty ? "address \(peer)" : peerIdentities.joined(separator: ",")
    }
    /// The caller's address.
    public let peer: String
    /// The server's clock, which the deadline is on.
    public let clock: any ServiceClock
    /// The call's trace: the caller's when it sent a valid `traceparent`, else a new one. The
    /// handler runs with it as `TraceContext.current`.
    public let trace: TraceContext

    /// Time left before the deadline (zero once it has passed).
    public var remaining: Duration {
        let now = clock.nanoseconds()
        return deadline > now ? .nanoseconds(Int64(clamping: deadline - now)) : .zero
    }

    /// The deadline of the call the current task serves, if any. Clients started inside a
    /// handler use it, so a deadline propagates to the calls a handler makes.
    @TaskLocal public static var currentDeadline: UInt64?
}
