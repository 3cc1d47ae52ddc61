import BenchSupport
import Wire

/// Closed-loop writers, one connection each, from one epoll thread (the shape of
/// redis-benchmark and pgbench clients, so the figures are the ledger's, not a client
/// library's): each writer sends one RecordVerifiedState, waits for its answer (durable once
/// answered), and sends the next, until the phase's time is up. An answer that is not a newly
/// applied state counts as a failure.
struct AppendLoad {
    /// The ledgers the writers connect to, writer `i` to `ports[i % ports.count]`.
    let ports: [Int]
    let workload: AppendWorkload

    init(port: Int, workload: AppendWorkload) {
        ports = [port]
        self.workload = workload
    }

    init(ports: [Int], workload: AppendWorkload) {
        self.ports = ports
        self.workload = workload
    }

    /// Runs `writers` writers for `seconds`.
    func run(phase: String, writers: Int, seconds: Double) throws(BenchError) -> LoadGenerator.Outcome {
        let workload = self.workload
        let generator = try LoadGenerator(
            ports: ports, clients: writers, pipeline: 1, method: AppendWorkload.method,
            payload: { writer, sequence in
                workload.request(phase: phase, writer: writer, sequence: sequence).serialized()
            },
            check: { payload in
                guard let response = try? RecordVerifiedStateResponse(serialized: payload) else {
                    return "the answer is not a RecordVerifiedStateResponse"
                }
                return response.applied && !response.replayed ? nil : "an append was not newly applied"
            })
        return try generator.run(
            requests: Int.max, duration: .milliseconds(Int64(seconds * 1000)), limit: .seconds(Int64(seconds) + 120))
    }
}
