import Foundation
import HTTPClient
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Building request URLs: paths below a base, percent-encoded segments and query values, and
/// which base URLs a client accepts.
@Suite("HTTP calls and URLs")
struct HTTPCallTests {
    @Test("everything but the unreserved characters is percent-encoded, byte by byte")
    func percentEncoding() {
        #expect(PercentEncoding.unreserved("Az09-._~") == "Az09-._~")
        #expect(PercentEncoding.unreserved("a/b c?d%é:+=&") == "a%2Fb%20c%3Fd%25%C3%A9%3A%2B%3D%26")
        #expect(PercentEncoding.isDotSegment(".") && PercentEncoding.isDotSegment(".."))
        #expect(!PercentEncoding.isDotSegment("...") && !PercentEncoding.isDotSegment("a.b"))
    }

    @Test("the path goes below the base path without doubling slashes, query values encoded")
    func url() throws {
        let call = HTTPCall(method: "GET", path: "/v1/x%2Fy:run", query: [("start", "1"), ("token", "a b&c")])

        #expect(
            call.url(below: URL(string: "https://example.com")!)?.absoluteString
                == "https://example.com/v1/x%2Fy:run?start=1&token=a%20b%26c")
        #expect(
            call.url(below: URL(string: "http://127.0.0.1:8080/prefix/")!)?.absoluteString
                == "http://127.0.0.1:8080/prefix/v1/x%2Fy:run?start=1&token=a%20b%26c")
        #expect(call.summary == "GET /v1/x%2Fy:run")
        #expect(HTTPCall(method: "GET", path: "/secret", summary: "a call").summary == "a call")
    }

    @Test("the URLRequest carries method, Accept, and a JSON body with its content type")
    func urlRequest() throws {
        let call = HTTPCall(method: "POST", path: "/ack", body: Data("{}".utf8))

        let request = try #require(call.urlRequest(below: URL(string: "https://example.com")!, timeout: .seconds(3)))

        #expect(request.httpMethod == "POST")
        #expect(request.url?.absoluteString == "https://example.com/ack")
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(request.httpBody == Data("{}".utf8))
        #expect(request.timeoutInterval == 3)
    }

    @Test(
        "base URLs are https, or http to a loopback address, without credentials, query or fragment",
        arguments: [
            ("https://androidpublisher.googleapis.com", true), ("http://127.0.0.1:9000", true),
            ("http://localhost:1", true), ("http://[::1]:80", true), ("http://example.com", false),
            ("ftp://example.com", false), ("https://user:pw@example.com", false), ("https://example.com?a=1", false),
            ("https://example.com#f", false),
        ])
    func baseURLs(_ text: String, _ accepted: Bool) {
        #expect(URL(string: text)!.isHTTPSOrLoopbackHTTP == accepted)
    }
}
