import BenchSupport
import Wire

/// The command line of rpcbench.
struct BenchOptions: BenchCommandOptions {
    var serverPath = ""
    var method = LedgerRPC.health.name
    var requestsScale = 1.0
    var skipRedis = false
    var showHelp = false

    static let helpText = """
        usage: rpcbench --server PATH [--method NAME] [--requests-scale X] [--skip-redis]

        Measures unary round trips through the RPC runtime with a single-threaded epoll load
        generator (non-blocking sockets, TCP_NODELAY, pre-encoded frames), then runs
        redis-benchmark GET with the same clients, pipeline depth and request count against a
        local redis-server, and prints both side by side. The last line of output is one JSON
        object with every figure. The exit status is 0 whenever the measurement ran, whatever
        the ratios; it is non-zero only when something failed to run.

        Configurations: clients 1 and 50, each with pipeline 1 (one request in flight per
        connection) and 16 (16 frames per write; the next batch once all 16 replies arrived).

          --server PATH         service executable to start (RPC_LISTEN=127.0.0.1:0); required
          --method NAME         method to call with an empty request payload
                                (default subscriptions.ledger.v1.Ledger/Health; it must accept
                                an empty request)
          --requests-scale X    multiply every request count by X (default 1; e.g. 0.1 for a
                                quick look; at most 10)
          --skip-redis          measure the RPC server only; no redis-server or redis-benchmark
          -h, --help            show this text

        Needs redis-server, redis-cli and redis-benchmark on PATH unless --skip-redis
        (`scripts/install-deps bench`). Traffic goes to 127.0.0.1 only.
        """

    /// Parses `arguments` (without the program name). Throws for unknown or incomplete flags.
    init(arguments: [String]) throws(BenchError) {
        var rest = BenchArguments(arguments)
        while let flag = rest.nextFlag() {
            switch flag {
            case "--server": serverPath = try rest.value(for: flag)
            case "--method": method = try rest.value(for: flag)
            case "--requests-scale": requestsScale = try rest.number(for: flag, in: 0...10, excludingLower: true)
            case "--skip-redis": skipRedis = true
            case "-h", "--help": showHelp = true
            default: throw BenchError("unknown argument \"\(flag)\" (see --help)")
            }
        }
        if !showHelp && serverPath.isEmpty { throw BenchError("--server PATH is required (see --help)") }
        if method.isEmpty || method.utf8.contains(0) { throw BenchError("--method needs a non-empty name") }
    }
}
