import Foundation
import Glibc

// rpcbench: unary RPC round trips through the real server runtime beside redis-benchmark.
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
do {
    let errors = try Benchmark(options: options).run()
    exit(errors == 0 ? 0 : 1)
} catch {
    Benchmark.note("\(error)")
    exit(1)
}
