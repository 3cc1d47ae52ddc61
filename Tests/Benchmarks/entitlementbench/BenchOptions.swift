import BenchSupport

/// The command line of entitlementbench.
struct BenchOptions: BenchCommandOptions {
    var ledgerPath = ""
    var entitlementPath = ""
    var accounts = 1_000_000
    var months = 12
    /// nil: rows for each paid month up to 1,000,000 accounts, none above.
    var periodRows: Bool?
    /// A seeded database kept between runs (seeded when missing).
    var databasePath: String?
    var requestsScale = 1.0
    var propagationSamples = 200
    var readyLimitSeconds = 600
    var skipRedis = false
    var httpOnly = false
    var showHelp = false

    /// Whether the seeding writes a `periods` row per paid month.
    var writesPeriodRows: Bool { periodRows ?? (accounts <= 1_000_000) }

    static let helpText = """
        usage: entitlementbench --ledger PATH --entitlement PATH [--accounts N] [--months N] [--period-rows yes|no]
                                [--database PATH] [--requests-scale X]
                                [--propagation-samples N] [--ready-limit S] [--skip-redis] [--http-only]

        Measures the entitlement service with a view of N accounts, each owning one active
        subscription that the policy maps to the capability `pro`, bought a year ago (--months)
        and renewed monthly since (half App Store, half Google Play purchases); each state
        carries the merged access period of its paid months. With period rows (the default up
        to 1,000,000 accounts; --period-rows), each paid month is also a `periods` row: an App
        Store transaction with about 3 KB of raw signed-transaction stand-in, a Play order with
        a subscriptionsv2 answer of about 700 bytes (25 GB of SQLite at 1,000,000 accounts, so
        not at 10,000,000 on a machine of this kind; neither the snapshot nor the view reads
        them). `--months 1` is a view of fresh purchases, one period each.

        1. Memory and start. The ledger (SQLite, a fresh temporary directory) migrates an empty
           database; an entitlement service started on it gives the resident memory of an empty
           view. The benchmark then inserts the N accounts into that database directly (one
           transaction, flushed to disk before the clock starts, as a settled database is),
           starts the ledger on it again, empties the page cache of the database file (sync and
           /proc/sys/vm/drop_caches, or where that is not allowed posix_fadvise DONTNEED on the
           file; the table says which), starts a fresh entitlement service with a checkpoint
           path and no checkpoint, and times it from the spawn to the first 200 from /readyz
           (polled every 10 ms): ready from a snapshot, cold (target: 30 s at 1,000,000
           accounts), with the CPU seconds of both processes and the bytes the ledger read. Resident memory (VmRSS) 1 s after ready, minus
           the empty view's, divided by N is the memory per account (target: at most 250
           bytes). A second service (no checkpoint) is then started beside the first and timed
           the same way: a scale-out, with the ledger running and warm. The first is then
           stopped (SIGTERM: it writes its checkpoint as it stops) and started again on its
           checkpoint: ready from a checkpoint (target: 5 s at 10,000,000 accounts), and its
           memory per account again. The loads below run against that restarted service.
        2. CheckAccess through the RPC runtime from a single-threaded epoll load generator, for
           random seeded accounts (every answer checked to be allowed), at 1 and 50 connections,
           unpipelined and 16 deep; beside redis-benchmark -t get with the same clients,
           pipeline and request count against a local redis-server. Then CheckAccess over HTTP
           (the Connect gateway, JSON, keep-alive) from wrk with 50 connections, beside nginx
           serving a static file with the bytes of a CheckAccess answer to the same wrk script,
           connections and duration (target: at least half nginx's rate); then the service
           again with wrk held to half the rate it reached (target: p99 under 5 ms).
        3. Propagation: a purchase for a fresh account recorded in the ledger and linked
           (RecordVerifiedState, then LinkAccount), then CheckAccess called back to back until
           it allows; the time from the ledger's acknowledgement of the link to the first
           allowed answer, over --propagation-samples purchases.

        Prints a table, then as its last line one JSON object with every figure, ratio and a
        verdict per target. The exit status is 0 whenever the measurement ran, whatever the
        verdicts; it is non-zero only when something failed to run or a call failed.

          --ledger PATH               the ledger executable; required
          --entitlement PATH          the entitlement executable; required
          --accounts N                accounts in the view (default 1000000; 1…10000000; the
                                      snapshot's ready target is judged from 1000000 up, the
                                      checkpoint's from 10000000)
          --period-rows yes|no        also a `periods` row per paid month (default: yes up to
                                      1000000 accounts, no above)
          --database PATH             seed this SQLite file and keep it; when it exists, use it
                                      as it is (seeded by an earlier run with the same --accounts,
                                      --months and --period-rows) and skip the seeding
          --months N                  paid months per subscription, the current one included
                                      (default 12; 1…120)
          --requests-scale X          multiply every load request count by X (default 1; at most 10)
          --propagation-samples N     purchases timed for propagation (default 200; 1…100000)
          --ready-limit S             give up when the service is not ready after S seconds
                                      (default 600)
          --skip-redis                measure the service only; no redis-server or redis-benchmark
          --http-only                 only CheckAccess over HTTP beside nginx (after seeding; the
                                      default --accounts is then 100000): a run of about a minute
          -h, --help                  show this text

        Needs redis-server, redis-cli and redis-benchmark on PATH unless --skip-redis, and wrk,
        nginx and curl (`scripts/install-deps bench`). Traffic goes to 127.0.0.1 only.
        """

    /// Parses `arguments` (without the program name). Throws for unknown or incomplete flags.
    init(arguments: [String]) throws(BenchError) {
        var rest = BenchArguments(arguments)
        var accountsGiven = false
        while let flag = rest.nextFlag() {
            switch flag {
            case "--ledger": ledgerPath = try rest.value(for: flag)
            case "--entitlement": entitlementPath = try rest.value(for: flag)
            case "--accounts":
                accounts = try rest.integer(for: flag, in: 1...10_000_000)
                accountsGiven = true
            case "--months": months = try rest.integer(for: flag, in: 1...120)
            case "--database": databasePath = try rest.value(for: flag)
            case "--period-rows":
                switch try rest.value(for: flag) {
                case "yes": periodRows = true
                case "no": periodRows = false
                case let other: throw BenchError("--period-rows expects yes or no, got \"\(other)\"")
                }
            case "--requests-scale": requestsScale = try rest.number(for: flag, in: 0...10, excludingLower: true)
            case "--propagation-samples": propagationSamples = try rest.integer(for: flag, in: 1...100_000)
            case "--ready-limit": readyLimitSeconds = try rest.integer(for: flag, in: 1...7200)
            case "--skip-redis": skipRedis = true
            case "--http-only": httpOnly = true
            case "-h", "--help": showHelp = true
            default: throw BenchError("unknown argument \"\(flag)\" (see --help)")
            }
        }
        if httpOnly && !accountsGiven { accounts = 100_000 }
        if !showHelp && (ledgerPath.isEmpty || entitlementPath.isEmpty) {
            throw BenchError("--ledger PATH and --entitlement PATH are required (see --help)")
        }
    }
}
