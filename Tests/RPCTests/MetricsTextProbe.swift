import Observability
import RPC

/// Renders a server's metric families for assertions.
struct MetricsTextProbe {
    var output = ""

    mutating func render(_ server: RPCServer) {
        var text = MetricsText()
        server.writeMetrics(into: &text)
        output = text.output
    }
}
