import Foundation
import Testing
import Wire

@Suite("docs/api.md's table of services and methods")
struct APITableTests {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/api.md")

    /// The table's rows: each service's full name and the method names of its row, in order,
    /// with whether each is marked `(stream)`.
    static func rows(of text: String) -> [String: [(name: String, stream: Bool)]] {
        var rows: [String: [(String, Bool)]] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 2, cells[0].hasPrefix("`"), cells[0].hasSuffix("`") else { continue }
            let service = String(cells[0].dropFirst().dropLast())
            // `Name`, or `Name` (stream); other words between them are prose.
            let pieces = cells[1].split(separator: "`", omittingEmptySubsequences: false)
            rows[service] = stride(from: 1, to: pieces.count, by: 2).map { index in
                (String(pieces[index]), index + 1 < pieces.count && pieces[index + 1].hasPrefix(" (stream)"))
            }
        }
        return rows
    }

    @Test("every method of every service is in the table, marked as a stream when it is one, and nothing else")
    func everyMethodListed() throws {
        let rows = Self.rows(of: try String(contentsOf: Self.page, encoding: .utf8))
        #expect(Set(rows.keys) == Set(ProtoSchema.services.map(\.fullName)))
        for service in ProtoSchema.services {
            let listed = try #require(rows[service.fullName], "\(service.fullName) has no row")
            #expect(
                listed.map(\.name).sorted() == service.methods.map(\.name).sorted(),
                "\(service.fullName)'s row lists other methods than its descriptor")
            for method in service.methods {
                #expect(
                    listed.first { $0.name == method.name }?.stream == method.isServerStreaming,
                    "\(service.fullName)/\(method.name)")
            }
        }
    }

    @Test("the table's reader sees a method left out")
    func readerSeesAGap() {
        let rows = Self.rows(
            of: """
                | service | methods |
                |---|---|
                | `a.B` | `One`, `Two` (stream); the rest: `Three` |
                """)
        #expect(rows.count == 1)
        #expect(rows["a.B"]?.map(\.name) == ["One", "Two", "Three"])
        #expect(rows["a.B"]?.map(\.stream) == [false, true, false])
    }
}
