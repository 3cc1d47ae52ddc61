import Crypto
import Foundation
import HTTP
public import Lifecycle
import Observability
import RPC
import Sockets
import Wire

/// Runs `subctl console`: connects to the three services as the operator, learns the operator's
/// role from the ledger, serves the console over HTTP on the operator's machine, and stops when
/// `stop` resolves.
public enum ConsoleServer {
    /// How long one page may take (its calls have their own deadlines).
    static let pageTimeout: Duration = .seconds(60)

    /// Serves `options` until `stop` resolves, after handing `ready` the one line to print:
    /// `console ready at http://HOST:PORT/login?token=HEX` (`…/` with `--no-login`). Throws when a
    /// TLS or root file cannot be used, the ledger does not answer, or the address cannot be bound.
    public static func run(_ options: ConsoleOptions, ready: (String) -> Void, stop: ShutdownSignal)
        async throws(SubctlError)
    {
        let ledger = try options.ledger.client()
        defer { ledger.shutdown() }
        let verifier = try options.verifier.client()
        defer { verifier.shutdown() }
        let entitlement = try options.entitlement.client()
        defer { entitlement.shutdown() }
        let health: HealthResponse
        do throws(SubctlError) {
            health = try await ledger.call(
                LedgerRPC.health.name, HealthRequest(), as: HealthResponse.self, timeout: options.ledger.timeout
            ).response
        } catch {
            throw SubctlError(error.code, "the ledger at \(options.ledger.address) does not answer: \(error.message)")
        }
        var anchors: [X509Certificate] = []
        for path in options.appleRoots { anchors += try CommandRunner.anchors(path, option: "--apple-root") }
        let server = HTTPServer(
            host: options.listen.host, port: options.listen.port,
            limits: HTTPLimits(maxBodyBytes: 256 * 1024, maxConnections: 64, threads: 4), role: "console",
            logger: Logger(service: "subctl-console", minimumLevel: .warning))
        do throws(HTTPServerError) {
            try server.start()
        } catch {
            throw SubctlError(.invalidArgument, "console cannot listen on \(options.listen): \(error.message)")
        }
        defer { server.stop() }
        let address = HostPort(host: options.listen.host, port: server.port)
        let console = Console(
            services: Console.Services(
                ledger: ledger, verifier: verifier, entitlement: entitlement,
                timeout: options.ledger.timeout ?? CallOptions.defaultTimeout),
            identity: try identity(options.ledger.tls), readOnly: health.callerReadOnly, address: address,
            requireLogin: options.login, origin: options.origin, appleAnchors: anchors,
            now: { Int64(Date().timeIntervalSince1970 * 1000) })
        let handler: HTTPHandler = { request in
            switch BlockingCall.run(timeout: pageTimeout, { await console.respond(to: request) }) {
            case .success(let response)?:
                return response
            default:
                var response = HTTPResponse.text("the services did not answer in time\n", status: 504)
                ConsoleResponse.secure(&response)
                return response
            }
        }
        for method in ["GET", "POST"] {
            server.route(method, "/", handler)
            server.route(method, "/*", handler)
        }
        server.answerRefusals { refusal in
            var response = refusal.plainText
            ConsoleResponse.secure(&response)
            return response
        }
        ready("console ready at \(console.readyURL(address))")
        _ = await stop.wait()
    }

    /// The operator's name: the first name of the client certificate, or `no TLS` without one.
    static func identity(_ tls: CallOptions.TLSFiles?) throws(SubctlError) -> String {
        guard let tls else { return "no TLS" }
        let certificate: X509Certificate?
        do throws(CryptoError) {
            certificate = try X509Certificate.loadPEMChain(path: tls.certificatePath).first
        } catch {
            throw SubctlError(.invalidArgument, "cannot read --tls-cert \(tls.certificatePath): \(error.message)")
        }
        return certificate.flatMap { PeerIdentity.names(ofDER: $0.der).first } ?? "unnamed certificate"
    }
}
