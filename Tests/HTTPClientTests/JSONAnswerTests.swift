import Foundation
import HTTPClient
import Testing

/// How undecodable answers and server-supplied text are described in errors.
@Suite("JSON answers and server text")
struct JSONAnswerTests {
    struct Item: Decodable {
        let id: String
        let count: Int?
    }

    struct Page: Decodable {
        let items: [Item]
    }

    @Test(
        "a problem names the missing, mistyped or null field by its path, never a value",
        arguments: [
            (#"{"items":[{"id":"a"},{"count":2}]}"#, "has no items[1].id"),
            (#"{}"#, "has no items"),
            (#"{"items":[{"id":"secret-value","count":"3"}]}"#, "has a items[0].count of the wrong type"),
            (#"{"items":null}"#, "has a null items"),
            ("<html>", "is not a JSON object"),
        ])
    func problems(_ body: String, _ expected: String) {
        #expect(throws: JSONAnswer.Problem(expected)) { try JSONAnswer.decode(Page.self, from: Data(body.utf8)) }
    }

    @Test("server text keeps printable ASCII only, trimmed, at most the limit")
    func printableASCII() {
        #expect("  Invalid\u{7}\nvalue é \t ".printableASCII() == "Invalidvalue")
        #expect(String(repeating: "x", count: 300).printableASCII().count == 200)
        #expect("abcdef".printableASCII(limit: 3) == "abc")
    }
}
