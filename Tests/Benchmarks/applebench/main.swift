import Foundation
import Glibc

// applebench: App Store JWS verifications per second beside OpenSSL's raw ECDSA verify rate.
// See BenchOptions.helpText, or run with --help.

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
    try Benchmark(options: options).run()
    exit(0)
} catch {
    Benchmark.note("\(error)")
    exit(1)
}
