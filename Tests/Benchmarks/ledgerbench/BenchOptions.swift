import BenchSupport

/// The command line of ledgerbench.
struct BenchOptions: BenchCommandOptions {
    var serverPath = ""
    var seconds = 3.0
    var referenceSeconds = 3.0
    var rounds = 3
    var postgresScript = "scripts/postgres-test-server"
    var postgresBin = "/usr/lib/postgresql/15/bin"
    var skipSQLite = false
    var skipPostgres = false
    var showHelp = false

    static let helpText = """
        usage: ledgerbench --server PATH [--seconds S] [--reference-seconds S] [--rounds R]
                           [--postgres-script PATH] [--postgres-bin DIR] [--skip-sqlite] [--skip-postgres]

        Measures durable appends per second through the ledger's RecordVerifiedState RPC (each
        with a unique idempotency key, one event with a 500-byte raw payload) with 1 and 32
        concurrent writers, on SQLite (a fresh temporary directory) and on PostgreSQL (a
        throwaway server started with scripts/postgres-test-server on a free loopback port),
        then the same inserts done by the raw engine with the same durability and batch size:
        the sqlite3 shell running a generated script (WAL, synchronous=FULL) and pgbench with a
        custom script (synchronous_commit on), each on the schema the ledger itself created.
        Batch size: the mean batch the ledger's group commit formed in that phase (1 row per
        transaction with 1 writer); one batch of every writer is shown beside it.

        R rounds, each: the ledger at 1 and 32 writers, then the references right after, so
        that a disk or machine whose speed drifts moves both sides of a round alike. Each row is
        judged by the median of its rounds' ratios (the table shows the median round's figures
        and the lowest and highest ratio); the informational runs are the last round's. On
        PostgreSQL the write ceiling is measured after the rounds.

        Prints a table, then as its last line one JSON object with every figure. The exit status
        is 0 whenever the measurement ran, whatever the ratios; it is non-zero only when
        something failed to run. Every process and temporary directory it made is removed.

          --server PATH            the ledger executable; required
          --seconds S              measured seconds per ledger configuration (default 3; 0.5…120)
          --reference-seconds S    about how long each raw-engine run lasts (default 3; 0.5…120)
          --rounds R               rounds of ledger and reference runs (default 3; 1…20)
          --postgres-script PATH   the throwaway-server script (default scripts/postgres-test-server,
                                   relative to the working directory)
          --postgres-bin DIR       where pgbench, psql and pg_dump are looked for first
                                   (default /usr/lib/postgresql/15/bin; then PATH)
          --skip-sqlite            leave out the SQLite rows
          --skip-postgres          leave out the PostgreSQL rows
          -h, --help               show this text

        Needs sqlite3, pgbench, psql and pg_dump (`scripts/install-deps bench`). Traffic goes to
        127.0.0.1 only.
        """

    /// Parses `arguments` (without the program name). Throws for unknown or incomplete flags.
    init(arguments: [String]) throws(BenchError) {
        var rest = BenchArguments(arguments)
        while let flag = rest.nextFlag() {
            switch flag {
            case "--server": serverPath = try rest.value(for: flag)
            case "--seconds": seconds = try rest.number(for: flag, in: 0.5...120, unit: "seconds")
            case "--rounds": rounds = try rest.integer(for: flag, in: 1...20)
            case "--reference-seconds": referenceSeconds = try rest.number(for: flag, in: 0.5...120, unit: "seconds")
            case "--postgres-script": postgresScript = try rest.value(for: flag)
            case "--postgres-bin": postgresBin = try rest.value(for: flag)
            case "--skip-sqlite": skipSQLite = true
            case "--skip-postgres": skipPostgres = true
            case "-h", "--help": showHelp = true
            default: throw BenchError("unknown argument \"\(flag)\" (see --help)")
            }
        }
        if !showHelp && serverPath.isEmpty { throw BenchError("--server PATH is required (see --help)") }
        if skipSQLite && skipPostgres { throw BenchError("--skip-sqlite and --skip-postgres leave nothing to measure") }
    }
}
