import BenchSupport
import Foundation
import Glibc

// entitlementbench: CheckAccess through the real RPC runtime beside redis-benchmark, the view's
// memory per account and time to ready, and how fast a purchase becomes visible.
// See BenchOptions.helpText, or run with --help.

signal(SIGPIPE, SIG_IGN)  // a closed socket must be an error from write, not the end of the process

let options: BenchOptions
do {
    options = try BenchOptions(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    Benchmark.note("\(error)")
    exit(2)
}
if options.showHelp {
    print(BenchOptions.helpText)
    exit(0)
}
Interruption.install()
do {
    let errors = try Benchmark(options: options).run()
    exit(errors == 0 ? 0 : 1)
} catch {
    Benchmark.note("\(error)")
    exit(1)
}
