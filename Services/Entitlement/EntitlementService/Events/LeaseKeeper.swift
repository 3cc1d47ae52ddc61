import Foundation
import RPC
import Wire

/// One named lease of the ledger kept by one owner: taken and renewed with `AcquireLease`, and
/// given up when the ledger says another holds it, or when it could not be renewed for two
/// thirds of its time (it may have passed to another instance by then).
struct LeaseKeeper: Sendable {
    enum Change: Equatable {
        /// This owner holds it now and did not before.
        case taken
        /// Another holds it now, or it could not be renewed in time: stop.
        case lost(String)
        /// Nothing changed.
        case none
    }

    let name: String
    let owner: String
    let milliseconds: Int64
    /// For the `events` lease: when this instance turned the log on (the ledger starts the log
    /// after the newest change committed by then).
    var logOn: Int64?
    private(set) var held = false
    private var lastRenewal: Int64 = 0

    init(name: String, owner: String, milliseconds: Int64) {
        self.name = name
        self.owner = owner
        self.milliseconds = milliseconds
    }

    /// Asks the ledger once to take or renew it, waiting at most two thirds of the lease (what
    /// is left of it when a renewal is due): an ask held up longer, by a ledger not yet
    /// listening, would hold up the next ones too, where the default deadline is 30 s.
    func ask(_ client: any ClientTransport) async -> Result<AcquireLeaseResponse, RPCError> {
        do throws(RPCError) {
            return .success(
                try await client.call(
                    LedgerRPC.acquireLease,
                    AcquireLeaseRequest(
                        name: name, owner: owner, ttlMilliseconds: milliseconds, logOnMilliseconds: logOn),
                    timeout: .milliseconds(max(1, milliseconds * 2 / 3))))
        } catch {
            return .failure(error)
        }
    }

    /// What the answer `ask` got changes; `now` is this instance's clock.
    mutating func update(_ answer: Result<AcquireLeaseResponse, RPCError>, now: Int64) -> Change {
        switch answer {
        case .success(let answer) where answer.held:
            lastRenewal = now
            if held { return .none }
            held = true
            return .taken
        case .success(let answer):
            guard held else { return .none }
            held = false
            return .lost("the \(name) lease is held by \(answer.owner)")
        case .failure(let error):
            guard held, now - lastRenewal >= milliseconds * 2 / 3 else { return .none }
            held = false
            return .lost("the \(name) lease could not be renewed: \(error)")
        }
    }

    /// Gives it up here (the ledger refused a write under it).
    mutating func drop() { held = false }
}
