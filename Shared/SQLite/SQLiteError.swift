/// A failed SQLite call: the result code and `sqlite3_errmsg`'s text, drained at the call site.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "sqlite error \(code): \(message)" }
}
