public import Foundation

/// A page of the manual (`docs/*.md`, or `README.md`) as the tests that hold the manual to the
/// code read it: its fenced code blocks, its tables, and its sections.
public struct ManualPage: Sendable {
    /// The page's path inside the repository, e.g. `docs/simulator.md`.
    public let path: String
    public let text: String

    /// The repository's root, from this file's place in it (`Tests/TestSupport`).
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Reads `path` (relative to the repository's root); throws when it cannot.
    public init(_ path: String) throws {
        self.path = path
        text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// A page's text, for a test that reads a page given as text.
    public init(path: String, text: String) {
        self.path = path
        self.text = text
    }

    /// The part of the page under the heading `title` (any level, the heading's text after its
    /// `#`s), up to the next heading of the same or a higher level; nil when there is no such
    /// heading.
    public func section(_ title: String) -> ManualPage? {
        let lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { Self.heading($0)?.title == title }),
            let level = Self.heading(lines[start])?.level
        else { return nil }
        var end = start + 1
        var fenced = false
        while end < lines.count {
            if lines[end].hasPrefix("```") { fenced.toggle() }
            if !fenced, let next = Self.heading(lines[end]), next.level <= level { break }
            end += 1
        }
        return ManualPage(path: path, text: lines[(start + 1)..<end].joined(separator: "\n"))
    }

    /// The headings of the page, in order, with their levels (outside fenced blocks).
    public var headings: [(level: Int, title: String)] {
        var fenced = false
        var found: [(level: Int, title: String)] = []
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") { fenced.toggle() }
            if !fenced, let heading = Self.heading(line) { found.append(heading) }
        }
        return found
    }

    static func heading(_ line: String) -> (level: Int, title: String)? {
        let level = line.prefix { $0 == "#" }.count
        guard level > 0, line.dropFirst(level).hasPrefix(" ") else { return nil }
        return (level, String(line.dropFirst(level + 1)))
    }

    /// The contents of the fenced code blocks opened with "```" and `language` (every block
    /// when nil), in page order, without their fences.
    public func blocks(_ language: String? = nil) -> [String] {
        var blocks: [String] = []
        // The lines of the block being read; nil outside a block. `wanted`: of `language`.
        var current: [String]?
        var wanted = false
        for line in text.components(separatedBy: "\n") {
            if current != nil {
                if line == "```" {
                    if wanted { blocks.append(current!.joined(separator: "\n")) }
                    current = nil
                } else {
                    current!.append(line)
                }
            } else if line.hasPrefix("```") {
                current = []
                wanted = language == nil || String(line.dropFirst(3)) == language
            }
        }
        return blocks
    }

    /// The page's tables (pipe tables with a `|---|` line under the header), each as its rows,
    /// each row a dictionary from the header's cell text to the row's cell text (both trimmed).
    public var tables: [[[String: String]]] {
        var tables: [[[String: String]]] = []
        let lines = text.components(separatedBy: "\n")
        var index = 0
        while index + 1 < lines.count {
            guard lines[index].hasPrefix("|"), lines[index + 1].hasPrefix("|"),
                lines[index + 1].allSatisfy({ "|-: ".contains($0) })
            else {
                index += 1
                continue
            }
            let header = Self.cells(lines[index])
            var rows: [[String: String]] = []
            index += 2
            while index < lines.count, lines[index].hasPrefix("|") {
                let cells = Self.cells(lines[index])
                rows.append(Dictionary(zip(header, cells), uniquingKeysWith: { first, _ in first }))
                index += 1
            }
            tables.append(rows)
        }
        return tables
    }

    /// The first table whose header has every one of `columns`; nil when there is none.
    public func table(with columns: [String]) -> [[String: String]]? {
        tables.first { rows in rows.first.map { row in columns.allSatisfy { row[$0] != nil } } ?? false }
    }

    /// The cells of a table row: split at `|` outside backticks (a `\|` stays in its cell).
    static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var cell = ""
        var code = false
        var escaped = false
        for character in line {
            if escaped {
                cell.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "`" {
                code.toggle()
                cell.append(character)
            } else if character == "|", !code {
                cells.append(cell.trimmingCharacters(in: .whitespaces))
                cell = ""
            } else {
                cell.append(character)
            }
        }
        cells.append(cell.trimmingCharacters(in: .whitespaces))
        // The text before the first `|` and after the last one.
        return Array(cells.dropFirst().dropLast())
    }

    /// The texts in backticks in `text`, in order.
    public static func codeSpans(_ text: String) -> [String] {
        let parts = text.components(separatedBy: "`")
        return stride(from: 1, to: parts.count, by: 2).map { parts[$0] }
    }
}
