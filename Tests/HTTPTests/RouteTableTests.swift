import Testing

@testable import HTTP

@Suite("RouteTable")
struct RouteTableTests {
    /// `handler <body it returns>`, `405 <allow>` or `404`.
    private func outcome(_ match: RouteTable.Match) -> String {
        switch match {
        case .handler(let handler):
            "handler " + String(decoding: handler(HTTPRequest(method: "GET", path: "/")).body, as: UTF8.self)
        case .methodNotAllowed(let allow): "405 \(allow)"
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
}
