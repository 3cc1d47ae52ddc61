import Foundation
import RPC

extension CommandRunner {
    /// Runs `subctl import`: the report as text (also when the run stops early, before the
    /// error), and as JSON to `--report-json`.
    func runImport(_ options: ImportOptions, transport: (any ClientTransport)?) async throws(SubctlError) {
        let run = ImportRun(options: options, transport: transport, status: status, interrupt: interrupt)
        let report = try await run.run { partial in
            status?("")
            try? writeReport(partial, options)
        }
        status?("")
        try writeReport(report, options)
    }

    private func writeReport(_ report: ImportReport, _ options: ImportOptions) throws(SubctlError) {
        for line in report.text { write(line) }
        guard let path = options.reportJSONPath else { return }
        guard FileManager.default.createFile(atPath: path, contents: Data((report.json + "\n").utf8)) else {
            throw SubctlError(.invalidArgument, "cannot write the report to \(path)")
        }
    }
}
