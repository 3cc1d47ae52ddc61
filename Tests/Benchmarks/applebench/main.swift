import BenchSupport

// applebench: App Store JWS verifications per second beside OpenSSL's raw ECDSA verify rate.
// See BenchOptions.helpText, or run with --help.

BenchCommand.main(BenchOptions.self, name: "applebench") { options throws(BenchError) in
    try Benchmark(options: options).run()
    return 0  // a failed verification throws
}
