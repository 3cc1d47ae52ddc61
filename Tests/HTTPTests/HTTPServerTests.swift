import Glibc
import HTTP
import Observability
import Synchronization
import Testing

/// Counts handler calls across the server's threads.
final class CallCounter: Sendable {
    private let calls = Atomic(0)

    func increment() { calls.add(1, ordering: .relaxed) }
    var count: Int { calls.load(ordering: .relaxed) }
}

/// Keeps the last request a handler saw.
final class RequestRecorder: Sendable {
    private let last = Mutex<HTTPRequest?>(nil)

    func record(_ request: HTTPRequest) { last.withLock { $0 = request } }
    var request: HTTPRequest? { last.withLock { $0 } }
}

/// Starts a server on 127.0.0.1 with port 0, runs `body`, and stops it.
func withServer(maxBodyBytes: Int = 1 << 20, _ body: (HTTPServer) throws -> Void) throws {
    let server = HTTPServer(
        host: "127.0.0.1", port: 0, maxBodyBytes: maxBodyBytes, logger: Logger(service: "test", sink: .capturing()))
    try server.start()
    defer { server.stop() }
    try body(server)
}

@Suite("HTTPServer over real connections")
struct HTTPServerTests {
    @Test func getRouteReturnsStatusHeadersAndBody() throws {
        try withServer { server in
            server.route("GET", "/hello") { _ in
                var response = HTTPResponse.text("hello\n", status: 201)
                response.headers.append(("X-Trace", "abc-123"))
                return response
            }
            let response = try RawHTTPClient.request("GET", "/hello", port: server.port)
            #expect(response.status == 201)
            #expect(response.text == "hello\n")
            #expect(response.headers["x-trace"] == "abc-123")
            #expect(response.headers["content-type"] == "text/plain; charset=utf-8")
            #expect(response.headers["content-length"] == "6")
        }
    }

    @Test func handlerSeesMethodPathQueryAndLowercasedHeaders() throws {
        let recorder = RequestRecorder()
        try withServer { server in
            server.route("GET", "/echo") { request in
                recorder.record(request)
                return .json("{\"ok\":true}")
            }
            let response = try RawHTTPClient.request(
                "GET", "/echo?name=J%C3%BCrgen&flag&page=2&page=3", port: server.port,
                headers: [("X-Custom-Header", "Value One")])
            #expect(response.status == 200)
            #expect(response.text == "{\"ok\":true}")
            #expect(response.headers["content-type"] == "application/json")
        }
        let request = try #require(recorder.request)
        #expect(request.method == "GET")
        #expect(request.path == "/echo")
        #expect(request.query == ["name": "Jürgen", "flag": "", "page": "3"])
        #expect(request.headers["x-custom-header"] == "Value One")
        #expect(request.headers["host"] == "test")
        #expect(request.body.isEmpty)
    }

    @Test func postBodyOf200KilobytesArrivesIntact() throws {
        let body = (0..<200 * 1024).map { UInt8(truncatingIfNeeded: $0 % 251) }
        try withServer { server in
            server.route("POST", "/upload") { request in HTTPResponse(status: 200, body: request.body) }
            let response = try RawHTTPClient.request("POST", "/upload", port: server.port, body: body)
            #expect(response.status == 200)
            #expect(response.body == body)
        }
    }

    @Test func chunkedBodyArrivesIntact() throws {
        let body = Array("a chunked request body".utf8)
        let recorder = RequestRecorder()
        try withServer { server in
            server.route("POST", "/upload") { request in
                recorder.record(request)
                return .text("ok")
            }
            let response = try RawHTTPClient.request(
                "POST", "/upload", port: server.port, headers: [("Transfer-Encoding", "chunked")],
                body: RawHTTPClient.chunked(body, chunkSize: 5))
            #expect(response.status == 200)
        }
        #expect(recorder.request?.body == body)
    }

    @Test func unknownPathGets404ListingWhatIsServed() throws {
        try withServer { server in
            #expect(try RawHTTPClient.request("GET", "/", port: server.port).text == "not found\n")
            server.route("GET", "/known") { _ in .text("known") }
            server.route("POST", "/known") { _ in .text("known") }
            server.route("GET", "/files/*") { _ in .text("file") }
            let response = try RawHTTPClient.request("GET", "/known/more", port: server.port)
            #expect(response.status == 404)
            #expect(response.text == "not found; served here: GET /files/*, GET /known, POST /known\n")
        }
    }

    @Test func refusalsTakeTheAnswerTheServerIsGivenWithTheirStatusAndHeaders() throws {
        let calls = CallCounter()
        try withServer(maxBodyBytes: 16) { server in
            server.route("PUT", "/item") { _ in
                calls.increment()
                return .text("put")
            }
            server.answerRefusals { refusal in
                var response = HTTPResponse.json(#"{"refused":"\#(refusal)"}"#, status: 200)
                response.headers.append(("X-Refused", "yes"))
                return response
            }
            let missing = try RawHTTPClient.request("POST", "/nothing", port: server.port)
            #expect(missing.status == 404)
            #expect(missing.headers["content-type"] == "application/json")
            #expect(missing.headers["x-refused"] == "yes")
            #expect(
                missing.text == #"{"refused":"notFound(method: "POST", path: "/nothing", served: ["PUT /item"])"}"#)
            let wrong = try RawHTTPClient.request("GET", "/item", port: server.port)
            #expect(wrong.status == 405)
            #expect(wrong.headers["allow"] == "PUT")
            #expect(wrong.text == #"{"refused":"methodNotAllowed(method: "GET", path: "/item", allow: ["PUT"])"}"#)
            let large = try RawHTTPClient.request(
                "PUT", "/item", port: server.port, body: Array(repeating: 7, count: 17))
            #expect(large.status == 413)
            #expect(large.headers["connection"] == "close")
            #expect(large.text == #"{"refused":"tooLarge(limit: 16)"}"#)
        }
        #expect(calls.count == 0)
    }

    @Test func wrongMethodGets405WithAllowWithoutCallingTheHandler() throws {
        let calls = CallCounter()
        try withServer { server in
            server.route("PUT", "/item") { _ in
                calls.increment()
                return .text("put")
            }
            server.route("get", "/item") { _ in
                calls.increment()
                return .text("get")
            }
            let response = try RawHTTPClient.request("DELETE", "/item", port: server.port)
            #expect(response.status == 405)
            #expect(response.headers["allow"] == "GET, PUT")
            #expect(response.text == "method not allowed\n")
        }
        #expect(calls.count == 0)
    }

    @Test func bodyAtTheLimitIsAcceptedAndOneByteOverGets413WithoutCallingTheHandler() throws {
        let calls = CallCounter()
        try withServer(maxBodyBytes: 1024) { server in
            server.route("POST", "/upload") { request in
                calls.increment()
                return .text("\(request.body.count)")
            }
            let atLimit = try RawHTTPClient.request(
                "POST", "/upload", port: server.port, body: Array(repeating: 7, count: 1024))
            #expect(atLimit.status == 200)
            #expect(atLimit.text == "1024")

            let over = try RawHTTPClient.request(
                "POST", "/upload", port: server.port, body: Array(repeating: 7, count: 1025))
            #expect(over.status == 413)
            #expect(over.text == "request body exceeds 1024 bytes\n")
        }
        #expect(calls.count == 1)
    }

    @Test func chunkedBodyOverTheLimitGets413WithoutCallingTheHandler() throws {
        let calls = CallCounter()
        try withServer(maxBodyBytes: 1024) { server in
            server.route("POST", "/upload") { _ in
                calls.increment()
                return .text("called")
            }
            let response = try RawHTTPClient.request(
                "POST", "/upload", port: server.port, headers: [("Transfer-Encoding", "chunked")],
                body: RawHTTPClient.chunked(Array(repeating: 1, count: 1025), chunkSize: 100))
            #expect(response.status == 413)
            #expect(response.text == "request body exceeds 1024 bytes\n")
        }
        #expect(calls.count == 0)
    }

    @Test func routeAddedAfterStartIsServed() throws {
        try withServer { server in
            #expect(try RawHTTPClient.request("GET", "/late", port: server.port).status == 404)
            server.route("GET", "/late") { _ in .text("late") }
            let response = try RawHTTPClient.request("GET", "/late", port: server.port)
            #expect(response.status == 200)
            #expect(response.text == "late")
        }
    }

    @Test func portIsTheBoundPortAndStopRefusesNewConnections() throws {
        let server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "test", sink: .capturing()))
        #expect(server.port == 0)
        try server.start()
        let port = server.port
        #expect(port > 0 && port <= 65535)
        server.route("GET", "/up") { _ in .text("up") }
        #expect(try RawHTTPClient.request("GET", "/up", port: port).status == 200)

        server.stop()
        server.stop()
        #expect(server.port == port)
        let error = #expect(throws: RawHTTPClientError.self) { try RawHTTPClient.connect(port: port) }
        #expect(error?.code == ECONNREFUSED)
    }

    @Test func startingTwiceOrOnAPortInUseFailsWithAClearMessage() throws {
        try withServer { server in
            let again = #expect(throws: HTTPServerError.self) { try server.start() }
            #expect(again?.code == .alreadyStarted)

            let other = HTTPServer(
                host: "127.0.0.1", port: server.port, logger: Logger(service: "test", sink: .capturing()))
            let error = #expect(throws: HTTPServerError.self) { try other.start() }
            #expect(error?.code == .cannotListen)
            #expect(error?.description == "cannot listen on 127.0.0.1:\(server.port): address in use")
        }
    }

    @Test func portOutOfRangeIsRejected() {
        let server = HTTPServer(host: "127.0.0.1", port: 70000, logger: Logger(service: "test", sink: .capturing()))
        let error = #expect(throws: HTTPServerError.self) { try server.start() }
        #expect(error?.code == .invalidAddress)
        #expect(error?.description == "invalid port 70000: must be 0...65535")
    }

    @Test(.enabled(if: RawHTTPClient.hasIPv6Loopback)) func servesOnAnIPv6Literal() throws {
        let server = HTTPServer(host: "::1", port: 0, logger: Logger(service: "test", sink: .capturing()))
        try server.start()
        defer { server.stop() }
        server.route("GET", "/v6") { _ in .text("six") }
        let response = try RawHTTPClient.request("GET", "/v6", port: server.port, host: "::1")
        #expect(response.status == 200)
        #expect(response.text == "six")
    }
}
