import CLibPQ

/// A checked connection URL (or key=value string) that knows its own secrets.
///
/// Its description names only host, port and database; `redact` removes every spelling of the
/// password from a message, since libpq's parse errors can quote the URL.
struct PostgresURL: Sendable, CustomStringConvertible, CustomReflectable {
    let text: String
    private let secrets: [String]
    private let endpoint: String

    /// Parses `text` without connecting; throws `.invalidURL` with a redacted libpq message.
    init(_ text: String) throws(PostgresError) {
        self.text = text
        var secrets = Self.passwordsSpelled(in: text)
        var error: UnsafeMutablePointer<CChar>?
        // PQconninfoParse allocates the option array and the error text; both are freed here.
        guard let options = PQconninfoParse(text, &error) else {
            let message = error.map { String(cString: $0) } ?? "out of memory"
            PQfreemem(error)
            throw PostgresError(code: .invalidURL, message: Self.redact(message, secrets: secrets))
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        if let password = values["password"] { secrets.append(password) }
        self.secrets = secrets.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
        endpoint =
            "\(values["host"] ?? values["hostaddr"] ?? "default host"):\(values["port"] ?? "default port")"
            + "/\(values["dbname"] ?? "default database")"
    }

    /// `host:port/dbname`, never the user information.
    var description: String { endpoint }
    var customMirror: Mirror { Mirror(self, children: [:]) }

    /// `message` with every spelling of the password replaced by `***`.
    func redact(_ message: String) -> String { Self.redact(message, secrets: secrets) }

    private static func redact(_ message: String, secrets: [String]) -> String {
        var message = message
        for secret in secrets where !secret.isEmpty { message = message.replacing(secret, with: "***") }
        while message.last?.isWhitespace == true { message.removeLast() }
        return message
    }

    /// The password as written: `scheme://user:password@…` (libpq reads user information up to the
    /// first `@` or `/`) and every `password=` value, quoted or not, percent-encoded or not.
    private static func passwordsSpelled(in text: String) -> [String] {
        var found: [String] = []
        if let scheme = text.firstRange(of: "://") {
            let rest = text[scheme.upperBound...]
            if let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@",
                let colon = rest[..<end].firstIndex(of: ":")
            {
                found.append(String(rest[rest.index(after: colon)..<end]))
            }
        }
        var rest = text[...]
        while let key = rest.firstRange(of: "password=") {
            rest = rest[key.upperBound...]
            if rest.first == "'" {
                found.append(String(rest.dropFirst().prefix { $0 != "'" }))
            } else {
                found.append(String(rest.prefix { $0 != "&" && !$0.isWhitespace }))
            }
        }
        return found
    }
}
