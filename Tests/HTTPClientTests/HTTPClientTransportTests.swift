import Foundation
import HTTP
import HTTPClient
import Observability
import Synchronization
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The shared URLSession transport against the real HTTP server on 127.0.0.1, port 0.
@Suite("HTTP client transport")
struct HTTPClientTransportTests {
    /// A started server whose requests are counted by path.
    final class Server: Sendable {
        let http = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "transport-test", sink: .capturing()))
        private let hits = Mutex<[String]>([])

        init() throws { try http.start() }

        deinit { http.stop() }

        var paths: [String] { hits.withLock { $0 } }

        func route(_ method: String, _ path: String, _ response: HTTPResponse) {
            http.route(method, path) { [weak self] request in
                self?.hits.withLock { $0.append(request.path) }
                return response
            }
        }

        func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(http.port)\(path)")! }
    }

    let transport = HTTPClientTransport(requestTimeout: 10, maxResponseBytes: 64)

    @Test("an answer comes back with its status, lowercased headers and whole body")
    func answer() async throws {
        let server = try Server()
        server.route("GET", "/a", HTTPResponse(status: 201, headers: [("X-Thing", "1")], body: Array("hello".utf8)))

        let response = try await transport.perform(URLRequest(url: server.url("/a"))).get()

        #expect(response.status == 201)
        #expect(response.headers["x-thing"] == "1")
        #expect(response.body == Data("hello".utf8))
    }

    @Test("a redirect comes back as it is and its Location is never requested")
    func redirectIsReturned() async throws {
        let server = try Server()
        server.route(
            "GET", "/from", HTTPResponse(status: 302, headers: [("Location", server.url("/to").absoluteString)]))
        server.route("GET", "/to", HTTPResponse(status: 200))

        let response = try await transport.perform(URLRequest(url: server.url("/from"))).get()

        #expect(response.status == 302)
        #expect(server.paths == ["/from"])
    }

    @Test("a body longer than the limit is .tooLarge")
    func tooLarge() async throws {
        let server = try Server()
        server.route("GET", "/big", HTTPResponse(status: 200, body: Array(repeating: UInt8(ascii: "x"), count: 65)))
        server.route("GET", "/fits", HTTPResponse(status: 200, body: Array(repeating: UInt8(ascii: "x"), count: 64)))

        let big = await transport.perform(URLRequest(url: server.url("/big")))
        let fits = try await transport.perform(URLRequest(url: server.url("/fits"))).get()

        #expect(throws: HTTPClientTransport.Failure.tooLarge(limit: 64)) { try big.get() }
        #expect(fits.body.count == 64)
    }

    @Test("a refused connection is .network(\"connection refused\")")
    func connectionRefused() async throws {
        let held = try HeldPort()

        let outcome = await transport.perform(URLRequest(url: held.url.appendingPathComponent("gone")))
        withExtendedLifetime(held) {}

        #expect(throws: HTTPClientTransport.Failure.network("connection refused")) { try outcome.get() }
    }
}
