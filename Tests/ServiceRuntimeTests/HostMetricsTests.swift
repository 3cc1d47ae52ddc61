import Config
import Lifecycle
import Observability
import ServiceRuntime
import Synchronization
import Testing

@Suite("Host metrics")
struct HostMetricsTests {
    @Test("build_info names the service, BUILD_VERSION and BUILD_COMMIT; service_ready follows the readiness checks")
    func buildInfoAndReadiness() throws {
        let host = try ServiceHost(
            name: "ledger", healthMethod: "test.v1.Svc/Health", defaultRPC: "127.0.0.1:0", defaultHTTP: "127.0.0.1:0",
            environment: EnvironmentReader(["BUILD_VERSION": "1.4.2", "BUILD_COMMIT": "0a1b2c3"]),
            signal: ShutdownSignal(), logSink: .capturing())
        #expect(host.metrics.value(#"build_info{commit="0a1b2c3",service="ledger",version="1.4.2"}"#) == 1)
        let ready = Mutex(false)
        host.addReadinessCheck("snapshot") { ready.withLock { $0 } }
        #expect(host.metrics.value("service_ready") == 0)
        ready.withLock { $0 = true }
        #expect(host.metrics.value("service_ready") == 1)
    }

    @Test("without BUILD_VERSION and BUILD_COMMIT, the compiled-in version and commit \"unknown\"")
    func buildInfoDefaults() throws {
        let host = try ServiceHost(
            name: "verifier", healthMethod: "test.v1.Svc/Health", defaultRPC: "127.0.0.1:0",
            defaultHTTP: "127.0.0.1:0", environment: EnvironmentReader([:]), signal: ShutdownSignal(),
            logSink: .capturing())
        #expect(
            host.metrics.value(
                #"build_info{commit="unknown",service="verifier",version="\#(ServiceHost.defaultVersion)"}"#) == 1)
        #expect(host.metrics.value("service_ready") == 1)
    }

    @Test("a histogram counts each observation in the first bucket that holds it, cumulative on the page")
    func histogram() {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("wait_seconds", help: "Waits.", buckets: [1, 5], labels: ["queue": "a"])
        histogram.observe(0.5)
        histogram.observe(1)
        histogram.observe(3)
        histogram.observe(fromMilliseconds: 1000, to: 9000)
        histogram.observe(-2)
        #expect(
            registry.render() == """
                # HELP wait_seconds Waits.
                # TYPE wait_seconds histogram
                wait_seconds_bucket{le="1.0",queue="a"} 3
                wait_seconds_bucket{le="5.0",queue="a"} 4
                wait_seconds_bucket{le="+Inf",queue="a"} 5
                wait_seconds_sum{queue="a"} 12.5
                wait_seconds_count{queue="a"} 5

                """)
        #expect(registry.histogram("wait_seconds", help: "Waits.", buckets: [1], labels: ["queue": "a"]) === histogram)
    }

    @Test("a gauge holds seconds as a fraction, set from milliseconds, and adds whole counts")
    func gauge() {
        let registry = MetricsRegistry()
        let gauge = registry.gauge("lag_seconds", help: "Lag.")
        gauge.set(milliseconds: 1500)
        #expect(registry.value("lag_seconds") == 1.5)
        gauge.add(2)
        #expect(gauge.value == 3.5)
        gauge.set(7)
        #expect(registry.value("lag_seconds") == 7)
    }
}
