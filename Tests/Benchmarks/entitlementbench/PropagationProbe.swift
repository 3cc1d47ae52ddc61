import BenchSupport
import Glibc
import Wire

/// How long a purchase takes to reach CheckAccess: for each sample, a fresh account buys (the
/// verified state recorded in the ledger, then linked to the account, as the verifier does),
/// and from the moment the ledger acknowledged the link, CheckAccess is called back to back
/// until it answers allowed. Samples start at random moments (0–25 ms apart), as purchases do,
/// so none lines up with a poll interval of the feed.
struct PropagationProbe {
    let ledgerPort: Int
    let entitlementPort: Int
    let workload: PurchaseWorkload
    let runID: String

    struct Outcome {
        var latencies: LatencySamples
        /// CheckAccess calls made while waiting, over all samples.
        var checks = 0
        var maxMilliseconds = 0.0
    }

    /// Runs `samples` purchases. Throws when a write fails, a check fails, or a purchase is not
    /// visible within `limit`.
    func run(samples: Int, limit: Duration = .seconds(10)) throws(BenchError) -> Outcome {
        let ledger = try UnaryConnection(port: ledgerPort)
        let entitlement = try UnaryConnection(port: entitlementPort)
        var random = FastRandom()
        var outcome = Outcome(latencies: LatencySamples(capacity: samples))
        let limitNanoseconds = UInt64(limit.components.seconds) * 1_000_000_000
        // Room for 100,000 samples in each of 10^9 runs, above the seeded ids.
        let firstID = 3_000_000_000_000_000 + (random.next() % 1_000_000_000) * 100_000
        for sample in 0..<samples {
            usleep(UInt32(random.next() % 25_000))
            let accountID = random.uuidString()
            let (record, link) = workload.freshPurchase(
                sample: sample, firstID: firstID, runID: runID, accountID: accountID, random: &random)
            let check = PurchaseWorkload.check(accountID).serialized()
            try ledger.call(PurchaseWorkload.recordMethod, record.serialized()) { payload throws(BenchError) in
                guard let response = try? RecordVerifiedStateResponse(serialized: payload), response.applied else {
                    throw BenchError("purchase \(sample) was not applied by the ledger")
                }
            }
            try ledger.call(PurchaseWorkload.linkMethod, link.serialized()) { payload throws(BenchError) in
                guard let response = try? LinkAccountResponse(serialized: payload), response.outcome == .linked else {
                    throw BenchError("purchase \(sample) was not linked to its account")
                }
            }
            let acknowledged = MonotonicTime.nanoseconds()
            while true {
                let allowed = try entitlement.call(PurchaseWorkload.checkMethod, check) { payload throws(BenchError) in
                    guard let response = try? CheckAccessResponse(serialized: payload) else {
                        throw BenchError("a CheckAccess answer does not decode")
                    }
                    return response.allowed
                }
                outcome.checks += 1
                let now = MonotonicTime.nanoseconds()
                if allowed {
                    outcome.latencies.record(nanoseconds: now - acknowledged)
                    outcome.maxMilliseconds = max(outcome.maxMilliseconds, Double(now - acknowledged) / 1e6)
                    break
                }
                guard now - acknowledged < limitNanoseconds else {
                    throw BenchError("purchase \(sample) was not visible to CheckAccess within \(limit)")
                }
            }
        }
        return outcome
    }
}
