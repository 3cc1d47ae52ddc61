import BenchSupport
import Foundation
import Glibc

// ledgerbench: durable appends through the ledger beside the raw engines it runs on.
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
    try Benchmark(options: options).run()
    exit(0)
} catch {
    Benchmark.note("\(error)")
    exit(1)
}
