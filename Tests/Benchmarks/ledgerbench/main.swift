import BenchSupport

// ledgerbench: durable appends through the ledger beside the raw engines it runs on.
// See BenchOptions.helpText, or run with --help.

BenchCommand.main(BenchOptions.self, name: "ledgerbench") { options throws(BenchError) in
    try Benchmark(options: options).run()
    return 0  // a failed append throws
}
