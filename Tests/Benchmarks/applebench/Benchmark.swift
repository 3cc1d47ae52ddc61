import AppStore
import BenchSupport
import Crypto
import Foundation

/// One run: our warm and cold verification rates on one thread and on all, then OpenSSL's
/// ECDSA rates, then the report.
struct Benchmark {
    /// Warm verifications per second ÷ OpenSSL P-256 verifies per second.
    static let warmTarget = 0.9
    /// Cold verifications per second ÷ OpenSSL P-384 verifies per second.
    static let coldTarget = 0.3

    let options: BenchOptions

    /// Measures and prints the table and, last, the JSON line. Throws when the chain cannot be
    /// made, a verification fails, or openssl cannot be run or read.
    func run() throws(BenchError) {
        BenchCommand.warnIfBusy("applebench")
        let now = Date()
        let signedDate = Int64(now.timeIntervalSince1970 * 1000)
        let payload = TransactionPayload.json(signedDate: signedDate)
        let chain: AppleSigningChain
        let jws: String
        do {
            chain = try AppleSigningChain.generate(now: now)
            jws = try chain.sign(payload: payload)
        } catch {
            throw BenchError("cannot make the test chain: \(error)")
        }
        if let (path, count) = options.profile {
            let load = try load(chain: chain, jws: jws, cacheCapacity: path == "warm" ? 64 : 0)
            let seconds = try load.cpuSeconds(count: count)
            Self.note("\(path): \(count) verifications, \(ReportText.fixed(seconds / Double(count) * 1e6, 1)) µs of CPU each")
            return
        }
        let warm = try load(chain: chain, jws: jws, cacheCapacity: 64)
        let cold = try load(chain: chain, jws: jws, cacheCapacity: 0)
        Self.note("payload \(payload.count) bytes of JSON, JWS \(jws.utf8.count) bytes")

        // The judged one-thread figures are measured in rounds, each ours then openssl's, and
        // judged by the median of the rounds' ratios: a machine whose speed drifts (other
        // tenants, frequency) moves both sides of a round alike.
        let opensslSeconds = Int(options.seconds.rounded(.up))
        var warmRounds: [VerifyLoad.Result] = []
        var coldRounds: [VerifyLoad.Result] = []
        var speeds: [OpenSSLSpeed] = []
        for round in 1...options.rounds {
            warmRounds.append(try measure("round \(round): warm cache, 1 thread", warm, threads: 1))
            coldRounds.append(try measure("round \(round): no cache, 1 thread", cold, threads: 1))
            Self.note("round \(round): openssl speed -seconds \(opensslSeconds) ecdsap256 ecdsap384")
            speeds.append(try OpenSSLSpeed.measure(openssl: options.openssl, seconds: opensslSeconds))
        }
        let threads = options.threads
        let warmAll = try measure("warm cache, \(threads) threads", warm, threads: threads)
        let coldAll = try measure("no cache, \(threads) threads", cold, threads: threads)
        guard warm.verifier.cachedChains == 1, cold.verifier.cachedChains == 0 else {
            throw BenchError(
                "the caches hold \(warm.verifier.cachedChains) and \(cold.verifier.cachedChains) chains, not 1 and 0")
        }
        let speed = OpenSSLSpeed.median(speeds)

        let p256 = "openssl P-256 verify"
        let p384 = "openssl P-384 verify"
        let rows = [
            ReportRow(
                figure: "warm cache, 1 thread", key: "warm_1t", rounds: warmRounds,
                references: speeds.map(\.p256.verifyPerSecond), referenceName: p256, target: Self.warmTarget),
            ReportRow(
                figure: "no cache, 1 thread", key: "cold_1t", rounds: coldRounds,
                references: speeds.map(\.p384.verifyPerSecond), referenceName: p384, target: Self.coldTarget),
            ReportRow(
                figure: "warm cache, \(threads) threads", key: "warm_all", ours: warmAll, perCPUSecond: false,
                reference: speed.p256.verifyPerSecond, referenceName: "\(p256) (1 thread)", target: nil),
            ReportRow(
                figure: "no cache, \(threads) threads", key: "cold_all", ours: coldAll, perCPUSecond: false,
                reference: speed.p384.verifyPerSecond, referenceName: "\(p384) (1 thread)", target: nil),
        ]
        let report = Report(
            rows: rows, speed: speed, seconds: options.seconds, rounds: options.rounds, payloadBytes: payload.count,
            jwsBytes: jws.utf8.count)
        print(report.table)
        print(report.json)
    }

    /// A verifier trusting `chain`'s root, with the cache as given, checked once on `jws`.
    private func load(chain: AppleSigningChain, jws: String, cacheCapacity: Int) throws(BenchError) -> VerifyLoad {
        var configuration = AppleSignedDataVerifier.Configuration(
            bundleID: TransactionPayload.bundleID, environment: .sandbox)
        configuration.cacheCapacity = cacheCapacity
        let verifier: AppleSignedDataVerifier
        do {
            verifier = try AppleSignedDataVerifier(anchors: [chain.root], configuration: configuration)
        } catch {
            throw BenchError("cannot make the verifier: \(error)")
        }
        let load = VerifyLoad(verifier: verifier, jws: jws, expectedTransactionID: TransactionPayload.transactionID)
        // One verification first: it must pass, and it fills the warm cache.
        _ = try load.run(threads: 1, seconds: 0)
        return load
    }

    private func measure(_ name: String, _ load: VerifyLoad, threads: Int) throws(BenchError) -> VerifyLoad.Result {
        let result = try load.run(threads: threads, seconds: options.seconds)
        Self.note(
            "\(name): \(Int(result.perCPUSecond)) verifications per CPU-second, \(Int(result.perWallSecond)) per "
                + "wall-clock second, \(ReportText.fixed(result.cpuShare, 2)) of a core per thread")
        if result.cpuShare < 0.9 {
            let share = ReportText.fixed(result.cpuShare, 2)
            Self.note("\(name): the threads had only \(share) of a core each: other work competed")
        }
        return result
    }

    static func note(_ text: String) { BenchCommand.note("applebench", text) }
}
