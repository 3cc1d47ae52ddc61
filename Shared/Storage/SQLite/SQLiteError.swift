/// A failed SQLite call: the result code and `sqlite3_errmsg`'s text, drained at the call site.
public struct SQLiteError: Error, Sendable, CustomStringConvertible, Equatable {
    public let code: Int32
    public let message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "sqlite error \(code): \(message)" }

    /// The disk (or the file size limit) is full: SQLITE_FULL.
    public var isDiskFull: Bool { code & 0xff == 13 }
    /// A UNIQUE, PRIMARY KEY or other constraint failed: SQLITE_CONSTRAINT.
    public var isConstraintViolation: Bool { code & 0xff == 19 }
}
