import Foundation

/// An HTTP/1.x answer's status line and headers.
struct HTTPResponseHead: Equatable {
    let status: Int
    /// Lowercased names; a repeated header's values joined by ", ".
    let headers: [String: String]
    let http10: Bool

    /// Where the head ends (just past the empty line) in `bytes`, if it is all there.
    /// (Counted from the slice's start.)
    static func end(in bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= 4 else { return nil }
        let base = bytes.startIndex
        for index in (base + 3)..<bytes.endIndex
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1 - base
        }
        return nil
    }

    /// Reads a head (the empty line included); nil when it is not HTTP/1.x.
    init?(_ bytes: ArraySlice<UInt8>) {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            var end = index
            if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            if end > start { lines.append(bytes[start..<end]) }
            start = index + 1
        }
        // "HTTP/1.x NNN": the version, a space, three digits.
        guard let first = lines.first, first.count >= 12, first.starts(with: Array("HTTP/1.".utf8)),
            first[first.startIndex + 8] == UInt8(ascii: " ")
        else { return nil }
        var status = 0
        for digit in first[(first.startIndex + 9)..<(first.startIndex + 12)] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            status = status * 10 + Int(digit - UInt8(ascii: "0"))
        }
        guard status >= 100, first.count == 12 || first[first.startIndex + 12] == UInt8(ascii: " ") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            var value = line[(colon + 1)...]
            while let byte = value.first, byte == 32 || byte == 9 { value.removeFirst() }
            while let byte = value.last, byte == 32 || byte == 9 { value.removeLast() }
            let text = String(decoding: value, as: UTF8.self)
            headers[name] = headers[name].map { $0 + ", " + text } ?? text
        }
        self.status = status
        self.headers = headers
        http10 = first[first.startIndex + 7] == UInt8(ascii: "0")
    }

    var chunked: Bool { headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false }
    var contentLength: Int? { headers["content-length"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil } }

    /// Whether the connection may carry another exchange after this answer.
    var keepAlive: Bool {
        let connection = headers["connection"]?.lowercased() ?? ""
        return http10 ? connection.contains("keep-alive") : !connection.contains("close")
    }
}

/// What the bytes read so far on a connection hold: a pure function of them, so that the loop
/// reading them can run it again as more arrive.
enum HTTPAnswer: Equatable {
    /// More bytes are needed.
    case incomplete
    /// A whole answer, the first `consumed` bytes; `keep` when the connection may carry another.
    case complete(status: Int, headers: [String: String], body: [UInt8], consumed: Int, keep: Bool)
    /// The stream ended before its first byte.
    case closedEmpty
    case failed(HTTPClientTransport.Failure)

    static func == (lhs: HTTPAnswer, rhs: HTTPAnswer) -> Bool {
        switch (lhs, rhs) {
        case (.incomplete, .incomplete), (.closedEmpty, .closedEmpty): return true
        case (.complete(let a, let b, let c, let d, let e), .complete(let f, let g, let h, let i, let j)):
            return a == f && b == g && c == h && d == i && e == j
        case (.failed(let a), .failed(let b)): return a == b
        default: return false
        }
    }

    static let lost = HTTPAnswer.failed(.network("connection lost"))

    /// A malformed answer, saying how what arrived begins (printable ASCII, at most 40
    /// characters), so that a log shows what the other end sent.
    static func malformed(_ bytes: ArraySlice<UInt8>) -> HTTPAnswer {
        let start = String(decoding: bytes.prefix(40), as: UTF8.self).printableASCII(limit: 40)
        return .failed(.network("malformed HTTP answer: it begins \"\(start)\" (\(bytes.count) bytes)"))
    }

    /// Reads `bytes` (`ended`: nothing more will come) as one answer; an interim 1xx answer
    /// before it is skipped. A body over `maxBody` bytes is `.tooLarge`.
    static func parse(_ bytes: [UInt8], ended: Bool, maxBody: Int) -> HTTPAnswer {
        var start = 0
        while true {
            guard let length = HTTPResponseHead.end(in: bytes[start...]) else {
                if ended { return bytes.isEmpty ? .closedEmpty : lost }
                return bytes.count - start > 64 * 1024 ? malformed(bytes[start...]) : .incomplete
            }
            let end = start + length
            guard let head = HTTPResponseHead(bytes[start..<end]) else { return malformed(bytes[start...]) }
            if (100..<200).contains(head.status) {
                start = end
                continue
            }
            func complete(_ body: [UInt8], _ consumed: Int, keep: Bool) -> HTTPAnswer {
                .complete(status: head.status, headers: head.headers, body: body, consumed: consumed, keep: keep)
            }
            if head.status == 204 || head.status == 304 { return complete([], end, keep: head.keepAlive) }
            if head.chunked {
                var body: [UInt8] = []
                var cursor = end
                while true {
                    guard let newline = bytes[cursor...].firstIndex(of: UInt8(ascii: "\n")) else {
                        return ended ? lost : .incomplete
                    }
                    let line = bytes[cursor..<newline].prefix { $0 != UInt8(ascii: ";") && $0 != UInt8(ascii: "\r") }
                    guard
                        let size = Int(
                            String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces), radix: 16),
                        size >= 0
                    else { return malformed(bytes[cursor...]) }
                    cursor = newline + 1
                    if size == 0 {
                        // Trailers, if any, up to the empty line.
                        while true {
                            guard let newline = bytes[cursor...].firstIndex(of: UInt8(ascii: "\n")) else {
                                return ended ? lost : .incomplete
                            }
                            let empty = newline == cursor || (newline == cursor + 1 && bytes[cursor] == 13)
                            cursor = newline + 1
                            if empty { return complete(body, cursor, keep: head.keepAlive) }
                        }
                    }
                    guard body.count + size <= maxBody else { return .failed(.tooLarge(limit: maxBody)) }
                    guard bytes.count >= cursor + size + 2 else { return ended ? lost : .incomplete }
                    body.append(contentsOf: bytes[cursor..<(cursor + size)])
                    cursor += size + 2
                }
            }
            if let length = head.contentLength {
                guard length <= maxBody else { return .failed(.tooLarge(limit: maxBody)) }
                guard bytes.count >= end + length else { return ended ? lost : .incomplete }
                return complete(Array(bytes[end..<(end + length)]), end + length, keep: head.keepAlive)
            }
            // No length: the body runs to the end of the stream.
            guard bytes.count - end <= maxBody else { return .failed(.tooLarge(limit: maxBody)) }
            return ended ? complete(Array(bytes[end...]), bytes.count, keep: false) : .incomplete
        }
    }
}
