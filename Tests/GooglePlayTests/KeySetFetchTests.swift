import Foundation
import GooglePlay
import HTTP
import Observability
import Testing

@Suite("Pub/Sub push: fetching the signing key set from a URL")
struct KeySetFetchTests {
    @Test(
        "a 200 answer is the key set; another status, a redirect (not followed) or a body over the limit is retryable")
    func fetchesFromURL() async throws {
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "jwks", sink: .capturing()))
        let keys = #"{"keys":[]}"#
        server.route("GET", "/certs") { _ in .json(keys) }
        server.route("GET", "/big") { _ in .json(String(repeating: " ", count: 5000) + keys) }
        server.route("GET", "/gone") { _ in HTTPResponse(status: 404) }
        server.route("GET", "/moved") { _ in
            HTTPResponse(status: 302, headers: [("Location", "/certs")], body: [])
        }
        try server.start()
        defer { server.stop() }
        func fetch(_ path: String) async -> Result<[UInt8], PubSubPushAuthenticationError> {
            do {
                let url = URL(string: "http://127.0.0.1:\(server.port)\(path)")!
                return .success(try await PubSubPushAuthenticator.fetchKeySet(.url(url), maxBytes: 1024))
            } catch let error as PubSubPushAuthenticationError {
                return .failure(error)
            } catch {
                return .failure(PubSubPushAuthenticationError(.malformed, "unexpected \(error)"))
            }
        }
        #expect(try await fetch("/certs").get() == Array(keys.utf8))
        let base = "http://127.0.0.1:\(server.port)"
        #expect(
            await fetch("/big")
                == .failure(
                    PubSubPushAuthenticationError(
                        .retryable, "the key set at \(base)/big is more than the 1024 bytes accepted")))
        #expect(
            await fetch("/gone")
                == .failure(PubSubPushAuthenticationError(.retryable, "\(base)/gone answered HTTP 404")))
        #expect(
            await fetch("/moved")
                == .failure(PubSubPushAuthenticationError(.retryable, "\(base)/moved answered HTTP 302")))
    }
}
