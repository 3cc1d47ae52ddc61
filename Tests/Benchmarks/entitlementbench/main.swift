import BenchSupport

// entitlementbench: CheckAccess through the real RPC runtime beside redis-benchmark, the view's
// memory per account and time to ready, and how fast a purchase becomes visible.
// See BenchOptions.helpText, or run with --help.

BenchCommand.main(BenchOptions.self, name: "entitlementbench") { options throws(BenchError) in
    try Benchmark(options: options).run()
}
