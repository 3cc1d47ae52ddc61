import BenchSupport
import Foundation

/// The command line of applebench.
struct BenchOptions: BenchCommandOptions {
    var seconds = 1.0
    var rounds = 5
    var threads = ProcessInfo.processInfo.activeProcessorCount
    var openssl = "openssl"
    /// `--profile`: one path (warm or cold) and how many verifications of it, nothing else.
    var profile: (path: String, count: Int)?
    var showHelp = false

    private static let cores = ProcessInfo.processInfo.activeProcessorCount

    static let helpText = """
        usage: applebench [--seconds S] [--rounds R] [--threads N] [--openssl PATH]
               applebench --profile warm|cold N

        Measures App Store signed-data verifications per second through
        AppleSignedDataVerifier.verifyTransaction: a signed transaction of a realistic size (every
        documented field, about 1.5 KB of JSON) under a freshly generated Apple-shaped chain
        (P-384 root and intermediate, P-256 leaf), each call checked in full and decoded.
          warm: the verified (leaf, intermediate) pair is cached; each call still parses the JWS,
                checks the validity period, verifies the ES256 signature and the claims;
          cold: no cache (cacheCapacity 0): each call also parses both certificates and verifies
                the path to the anchor (two P-384 signatures).
        R rounds, each: warm for S seconds on one thread, cold the same, then
        `openssl speed -seconds S ecdsap256 ecdsap384` (one thread). The one-thread figures are
        judged by the median of the rounds' ratios (each round's rate over openssl's in the same
        round, so a machine whose speed drifts moves both sides alike; the table shows the
        rounds' lowest and highest ratio too): warm against 0.9 x OpenSSL's P-256 verify/s, cold
        against 0.3 x its P-384 verify/s. Like openssl speed, which divides by the CPU time it
        used, the one-thread figures are per CPU-second of the measuring thread (so other work on
        the machine skews them less; the wall-clock rate and the share of a core the thread got
        are in the JSON line). Then each runs for S seconds on N threads at once sharing one
        verifier: wall-clock throughput, reported beside the median openssl rate, not judged.

        Prints a table, then as its last line one JSON object with every figure. The exit status
        is 0 whenever the measurement ran, whatever the ratios; it is non-zero only when
        something failed to run (a verification failed, openssl missing or unparsable).

          --seconds S      seconds per measurement and per openssl algorithm (default 1; 0.5…120;
                           openssl takes whole seconds, rounded up)
          --rounds R       rounds of the one-thread figures and openssl (default 5; 1…50)
          --threads N      threads of the all-cores runs (default: the active cores, here \(cores))
          --openssl PATH   the openssl executable (default: openssl on PATH)
          --profile P N    only N verifications on path P (warm or cold) on one thread, then
                           their CPU time per verification: a fixed amount of work for a
                           profiler or an instruction counter (valgrind --tool=callgrind) to
                           look at one path; no openssl, no table
          -h, --help       show this text

        Needs the openssl command (`scripts/install-deps`).
        """

    /// Parses `arguments` (without the program name). Throws for unknown or incomplete flags.
    init(arguments: [String]) throws(BenchError) {
        var rest = BenchArguments(arguments)
        while let flag = rest.nextFlag() {
            switch flag {
            case "--seconds": seconds = try rest.number(for: flag, in: 0.5...120, unit: "seconds")
            case "--rounds": rounds = try rest.integer(for: flag, in: 1...50)
            case "--threads": threads = try rest.integer(for: flag, in: 1...256)
            case "--openssl": openssl = try rest.value(for: flag)
            case "--profile":
                let path = try rest.value(for: flag)
                guard path == "warm" || path == "cold" else {
                    throw BenchError("--profile takes warm or cold, not \"\(path.prefix(20))\"")
                }
                profile = (path, try rest.integer(for: flag, in: 1...10_000_000))
            case "-h", "--help": showHelp = true
            default: throw BenchError("unknown argument \"\(flag)\" (see --help)")
            }
        }
    }
}
