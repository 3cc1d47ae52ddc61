import Testing

@testable import HTTP

@Suite("RouteTable")
struct RouteTableTests {
    /// `handler <body it returns>`, `405 <allow>` or `404`.
    private func outcome(_ match: RouteTable.Match) -> String {
        switch match {
        case .handler(let handler):
            "handler " + String(decoding: handler(HTTPRequest(method: "GET", path: "/")).body, as: UTF8.self)
        case .methodNotAllowed(let allow): "405 \(allow.joined(separator: ", "))"
        case .notFound: "404"
        }
    }

    @Test func matchesOnlyTheExactPathAndUppercasesTheRegisteredMethod() {
        var table = RouteTable()
        table.add("get", "/a", { _ in .text("a") })
        #expect(outcome(table.match("GET", "/a")) == "handler a")
        #expect(outcome(table.match("GET", "/a/")) == "404")
        #expect(outcome(table.match("GET", "/")) == "404")
        #expect(outcome(table.match("GET", "/a/b")) == "404")
    }

    @Test func listsTheAllowedMethodsSortedForAWrongMethod() {
        var table = RouteTable()
        table.add("POST", "/a", { _ in .text("post") })
        table.add("DELETE", "/a", { _ in .text("delete") })
        #expect(outcome(table.match("GET", "/a")) == "405 DELETE, POST")
    }

    @Test func laterRegistrationReplacesTheHandler() {
        var table = RouteTable()
        table.add("GET", "/a", { _ in .text("first") })
        table.add("GET", "/a", { _ in .text("second") })
        #expect(outcome(table.match("GET", "/a")) == "handler second")
    }

    @Test func aPrefixRouteTakesThePathsBelowItThatHaveNoExactRouteLongestFirst() {
        var table = RouteTable()
        table.add("GET", "/a/*", { _ in .text("a/*") })
        table.add("GET", "/a/b/*", { _ in .text("a/b/*") })
        table.add("GET", "/a/x", { _ in .text("a/x") })
        table.add("PUT", "/a/b/*", { _ in .text("put a/b/*") })
        #expect(outcome(table.match("GET", "/a/1")) == "handler a/*")
        #expect(outcome(table.match("GET", "/a/b/2/3")) == "handler a/b/*")
        #expect(outcome(table.match("GET", "/a/x")) == "handler a/x")
        #expect(outcome(table.match("GET", "/a/")) == "404")
        #expect(outcome(table.match("GET", "/a")) == "404")
        #expect(outcome(table.match("GET", "/ab")) == "404")
        #expect(outcome(table.match("DELETE", "/a/b/c")) == "405 GET, PUT")
    }

    @Test func listsWhatItServesByPathThenMethod() {
        var table = RouteTable()
        #expect(table.served == [])
        table.add("post", "/b", { _ in .text("b") })
        table.add("GET", "/b", { _ in .text("b") })
        table.add("GET", "/a/*", { _ in .text("a/*") })
        table.add("GET", "/a", { _ in .text("a") })
        #expect(table.served == ["GET /a", "GET /a/*", "GET /b", "POST /b"])
    }
}
