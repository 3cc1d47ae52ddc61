import BenchSupport

// rpcbench: unary RPC round trips through the real server runtime beside redis-benchmark.
// See BenchOptions.helpText, or run with --help.

BenchCommand.main(BenchOptions.self, name: "rpcbench") { options throws(BenchError) in
    try Benchmark(options: options).run()
}
