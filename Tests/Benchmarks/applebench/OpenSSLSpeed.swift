import BenchSupport

/// OpenSSL's own ECDSA rates on this machine: `openssl speed ecdsap256 ecdsap384`, one thread.
struct OpenSSLSpeed {
    /// Signatures and verifications per second of one curve.
    struct Rates: Equatable {
        var signPerSecond: Double
        var verifyPerSecond: Double
    }

    var p256: Rates
    var p384: Rates
    var version: String

    /// Runs `openssl speed -seconds S ecdsap256 ecdsap384` and reads its summary table. Throws
    /// when openssl is missing, fails, or prints no figures for a curve.
    static func measure(openssl: String, seconds: Int) throws(BenchError) -> OpenSSLSpeed {
        let limit = Duration.seconds(seconds * 4 + 60)
        let run = try ChildProcess.runToCompletion(
            openssl, ["speed", "-seconds", "\(seconds)", "ecdsap256", "ecdsap384"], limit: limit,
            separateStandardError: true)
        guard run.status == 0 else {
            throw BenchError("openssl speed exited with \(run.status): \(run.output.suffix(500))")
        }
        let version = try? ChildProcess.runToCompletion(openssl, ["version"], limit: .seconds(10))
        return try parse(run.output, version: version?.output ?? "")
    }

    /// The median of each rate over `runs` (at least one), with the first run's version.
    static func median(_ runs: [OpenSSLSpeed]) -> OpenSSLSpeed {
        func median(_ rate: (OpenSSLSpeed) -> Double) -> Double { ReportText.median(runs.map(rate)) }
        return OpenSSLSpeed(
            p256: Rates(signPerSecond: median(\.p256.signPerSecond), verifyPerSecond: median(\.p256.verifyPerSecond)),
            p384: Rates(signPerSecond: median(\.p384.signPerSecond), verifyPerSecond: median(\.p384.verifyPerSecond)),
            version: runs.first?.version ?? "")
    }

    /// Reads the summary lines, e.g. ` 256 bits ecdsa (nistp256)   0.0000s   0.0001s  45678.9  12345.6`
    /// (sign time, verify time, sign/s, verify/s): of the line naming the curve, the last two
    /// plain numbers. Lines of progress and other algorithms are ignored.
    static func parse(_ output: String, version: String) throws(BenchError) -> OpenSSLSpeed {
        func rates(_ curve: String) throws(BenchError) -> Rates {
            for line in output.split(whereSeparator: \.isNewline) where line.contains("(\(curve))") {
                guard line.contains("ecdsa"), let close = line.lastIndex(of: ")") else { continue }
                let numbers = line[line.index(after: close)...].split(whereSeparator: \.isWhitespace)
                    .compactMap { Double($0) }
                guard numbers.count >= 2, numbers.suffix(2).allSatisfy({ $0 > 0 }) else { continue }
                return Rates(signPerSecond: numbers[numbers.count - 2], verifyPerSecond: numbers[numbers.count - 1])
            }
            throw BenchError("openssl speed printed no sign/s and verify/s for \(curve): \(output.suffix(500))")
        }
        return OpenSSLSpeed(
            p256: try rates("nistp256"), p384: try rates("nistp384"),
            version: version.split(whereSeparator: \.isNewline).first.map(String.init) ?? "")
    }
}
