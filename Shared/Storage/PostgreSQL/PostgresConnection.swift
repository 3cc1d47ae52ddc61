import CLibPQ
import Synchronization

/// One PostgreSQL session over libpq, opened for durable writes (`synchronous_commit = on`).
///
/// Every call blocks its thread until the server answers, so keep them off Swift's cooperative
/// pool: services reach connections through `PostgresPool.withConnection`, which runs them on
/// the pool's own threads. Calls are serialized by a lock, but a connection is one session: give
/// it to one unit of work at a time. Statements are sent with text-format parameters (`$1`, `$2`,
/// …); COPY is not supported. Advisory locks need nothing special:
///
/// ```swift
/// try await pool.withConnection { db in
///     try db.transaction { db in
///         _ = try db.execute("SELECT pg_advisory_xact_lock($1)", [.int(accountID)])
///         let update = "UPDATE balance SET cents = cents + $2 WHERE id = $1"
///         return try db.executePrepared(update, [.int(accountID), .int(cents)]).affectedRows
///     }
/// }
/// ```
public final class PostgresConnection: Sendable {
    /// Runs on a freshly opened session (after connecting and after `reset`), outside the
    /// connection's lock, before anyone else uses it: for per-session settings such as
    /// `SET search_path TO …`. What it throws fails the connect or the reset.
    public typealias OnConnect = @Sendable (PostgresConnection) throws(PostgresError) -> Void

    // The PGconn is used only under `cache`'s lock; PQreset keeps the same handle.
    private nonisolated(unsafe) let handle: OpaquePointer
    private let cache = Mutex(StatementCache())
    private let url: PostgresURL
    private let sessionSettings: String
    private let onConnect: OnConnect?

    /// Opens a connection and configures the session; blocks until the server answers.
    ///
    /// - Parameters:
    ///   - url: `postgresql://user:password@host:port/dbname?…` or a libpq key=value string.
    ///   - statementTimeout: when given, the server cancels any statement running longer
    ///     (SQLSTATE 57014).
    ///   - onConnect: run on the new session, and again after every `reset`.
    /// - Throws: `PostgresError` with code `.invalidURL` or `.connection`; its message names host,
    ///   port and database but never the password. Or what `onConnect` throws.
    public convenience init(
        url: String, statementTimeout: Duration? = nil, onConnect: OnConnect? = nil
    ) throws(PostgresError) {
        try self.init(url: PostgresURL(url), statementTimeout: statementTimeout, onConnect: onConnect)
    }

    init(url: PostgresURL, statementTimeout: Duration?, onConnect: OnConnect? = nil) throws(PostgresError) {
        // PQconnectdb returns a handle even on failure (nil only without memory); PQfinish frees it.
        guard let handle = PQconnectdb(url.text) else {
            throw PostgresError(code: .connection, message: "cannot connect to \(url): out of memory")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = url.redact(String(cString: PQerrorMessage(handle)))
            PQfinish(handle)
            throw PostgresError(code: .connection, message: "cannot connect to \(url): \(message)")
        }
        // Notices ("… does not exist, skipping") would otherwise be printed on stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        self.handle = handle
        self.url = url
        var settings = "SET synchronous_commit = on; SET client_encoding = 'UTF8'; SET bytea_output = 'hex'"
        if let statementTimeout {
            let (seconds, attoseconds) = statementTimeout.components
            settings += "; SET statement_timeout = \(max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))"
        }
        sessionSettings = settings
        self.onConnect = onConnect
        try cache.withLock { _ throws(PostgresError) in try configureSession() }
        try onConnect?(self)
    }

    deinit { PQfinish(handle) }

    /// `host:port/dbname` of the server, for logs.
    public var endpoint: String { url.description }

    /// Whether the connection is open as far as libpq knows (`PQstatus == CONNECTION_OK`); it
    /// turns false after a call finds the socket broken.
    public var isHealthy: Bool { cache.withLock { _ in PQstatus(handle) == CONNECTION_OK } }

    /// Whether the session is inside a transaction block (open or aborted, or the state is unknown).
    public var isInTransaction: Bool { cache.withLock { _ in PQtransactionStatus(handle) != PQTRANS_IDLE } }

    /// Runs one statement with PQexecParams; `.null` parameters are SQL NULL.
    /// - Throws: `PostgresError`: `.query` with the server's SQLSTATE, or `.connection`.
    @discardableResult
    public func execute(_ sql: String, _ params: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        try Self.withParameters(params) { p throws(PostgresError) in
            try cache.withLock { _ throws(PostgresError) in
                // libpq copies the SQL and parameters into its send buffer before returning.
                try rows(PQexecParams(handle, sql, p.count, p.types, p.values, p.lengths, p.formats, 0))
            }
        }
    }

    /// Runs one statement as a named prepared statement: the first call with a given SQL text
    /// prepares it on this connection (parameter types taken from that call), later calls only
    /// execute it. Meant for fixed SQL; past 256 distinct texts it falls back to `execute`.
    @discardableResult
    public func executePrepared(_ sql: String, _ params: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        try Self.withParameters(params) { p throws(PostgresError) in
            try cache.withLock { cache throws(PostgresError) in
                guard let (name, isNew) = cache.name(for: sql) else {
                    return try rows(PQexecParams(handle, sql, p.count, p.types, p.values, p.lengths, p.formats, 0))
                }
                if isNew {
                    _ = try rows(PQprepare(handle, name, sql, p.count, p.types))
                    cache.names[sql] = name
                }
                return try rows(PQexecPrepared(handle, name, p.count, p.values, p.lengths, p.formats, 0))
            }
        }
    }

    /// One statement of a pipeline.
    public struct Statement: Sendable {
        public let sql: String
        public let parameters: [PostgresValue]
        /// Run as a named prepared statement (prepared in the same pipeline the first time).
        public let prepared: Bool

        public init(_ sql: String, _ parameters: [PostgresValue] = [], prepared: Bool = false) {
            self.sql = sql
            self.parameters = parameters
            self.prepared = prepared
        }
    }

    /// Sends every statement at once in libpq's pipeline mode and reads the results: one round
    /// trip instead of one per statement. Statements run in order; after the first that fails,
    /// the server skips the rest (they are not run), and that first error is thrown once the
    /// pipeline is drained. Inside a transaction the failure aborts it, as a single statement's would.
    /// - Throws: `PostgresError`, as `execute` does.
    public func pipeline(_ statements: [Statement]) throws(PostgresError) -> [PostgresRows] {
        if statements.count == 1, let only = statements.first {
            return [
                only.prepared ? try executePrepared(only.sql, only.parameters) : try execute(only.sql, only.parameters)
            ]
        }
        guard !statements.isEmpty else { return [] }
        return try cache.withLock { cache throws(PostgresError) in
            guard PQenterPipelineMode(handle) == 1 else { throw connectionError() }
            defer { _ = PQexitPipelineMode(handle) }
            // What each result will answer: a statement's prepare (name and SQL) or its execution.
            var expected: [(prepare: (name: String, sql: String)?, isStatement: Bool)] = []
            var newNames: [String: String] = [:]
            var sendFailed = false
            for statement in statements where !sendFailed {
                try Self.withParameters(statement.parameters) { p throws(PostgresError) in
                    var name: String?
                    if statement.prepared, let (given, isNew) = cache.name(for: statement.sql, pending: newNames) {
                        if isNew {
                            guard PQsendPrepare(handle, given, statement.sql, p.count, p.types) == 1 else {
                                sendFailed = true
                                return
                            }
                            newNames[statement.sql] = given
                            expected.append(((given, statement.sql), false))
                        }
                        name = given
                    }
                    let sent =
                        name.map { PQsendQueryPrepared(handle, $0, p.count, p.values, p.lengths, p.formats, 0) }
                        ?? PQsendQueryParams(handle, statement.sql, p.count, p.types, p.values, p.lengths, p.formats, 0)
                    if sent == 1 { expected.append((nil, true)) } else { sendFailed = true }
                }
            }
            guard !sendFailed, PQpipelineSync(handle) == 1 else { throw connectionError() }
            var results: [PostgresRows] = []
            var firstError: PostgresError?
            for item in expected {
                let result = PQgetResult(handle)
                if let result, PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    PQclear(result)
                } else {
                    do throws(PostgresError) {
                        let rows = try rows(result)
                        if let prepare = item.prepare {
                            cache.names[prepare.sql] = prepare.name
                        } else {
                            results.append(rows)
                        }
                    } catch {
                        firstError = firstError ?? error
                    }
                }
                // Each command's results end with a NULL.
                while let extra = PQgetResult(handle) { PQclear(extra) }
                if PQstatus(handle) != CONNECTION_OK { throw firstError ?? connectionError() }
            }
            // The sync point.
            while let result = PQgetResult(handle) {
                let status = PQresultStatus(result)
                PQclear(result)
                if status == PGRES_PIPELINE_SYNC { break }
            }
            if let firstError { throw firstError }
            return results
        }
    }

    private func connectionError() -> PostgresError {
        let code: PostgresError.Code = PQstatus(handle) == CONNECTION_OK ? .query : .connection
        return PostgresError(code: code, message: url.redact(String(cString: PQerrorMessage(handle))))
    }

    /// Runs `body` between BEGIN and COMMIT, rolling back when it throws.
    ///
    /// For another isolation level, make `SET TRANSACTION ISOLATION LEVEL SERIALIZABLE` the body's
    /// first statement and retry the whole call when the error `isSerializationFailure`. If an
    /// error inside `body` was caught there, the server has aborted the transaction and COMMIT
    /// rolls it back: that throws too. A `.connection` error from COMMIT leaves the outcome unknown.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try execute("BEGIN")
        let value: T
        do {
            value = try body(self)
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
        guard try execute("COMMIT").commandTag == "COMMIT" else {
            throw PostgresError(code: .query, message: "COMMIT rolled back the transaction: a statement in it failed")
        }
        return value
    }

    /// Closes and reopens the connection to the same URL (blocking), re-applies the session
    /// settings, runs `onConnect` again and forgets the prepared statements, which the server
    /// dropped with the session.
    public func reset() throws(PostgresError) {
        try cache.withLock { cache throws(PostgresError) in
            cache = StatementCache()
            PQreset(handle)
            guard PQstatus(handle) == CONNECTION_OK else {
                throw PostgresError(
                    code: .connection,
                    message: "cannot reconnect to \(url): \(url.redact(String(cString: PQerrorMessage(handle))))")
            }
            try configureSession()
        }
        try onConnect?(self)
    }

    /// Applies the session settings; call under the lock.
    private func configureSession() throws(PostgresError) {
        _ = try rows(PQexec(handle, sessionSettings))
    }

    /// Wraps a successful result, or drains the error from it (freeing it) or from the connection
    /// when there is no result. Call under the lock.
    private func rows(_ result: OpaquePointer?) throws(PostgresError) -> PostgresRows {
        let code: PostgresError.Code = PQstatus(handle) == CONNECTION_OK ? .query : .connection
        guard let result else {
            throw PostgresError(code: code, message: url.redact(String(cString: PQerrorMessage(handle))))
        }
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(taking: result)
        default:
            defer { PQclear(result) }
            // Fields are named by the letters of PG_DIAG_SQLSTATE ('C') and PG_DIAG_MESSAGE_PRIMARY ('M'),
            // char macros Swift does not import. The primary message only: DETAIL can quote row values.
            func field(_ letter: Unicode.Scalar) -> String? {
                PQresultErrorField(result, Int32(letter.value)).map { String(cString: $0) }
            }
            var message = field("M") ?? url.redact(String(cString: PQresultErrorMessage(result)))
            if message.isEmpty { message = "unexpected result \(String(cString: PQresStatus(status)))" }
            throw PostgresError(code: code, sqlState: field("C"), message: message)
        }
    }

    /// A statement's parameters as libpq takes them; valid only inside `withParameters`.
    private struct Parameters {
        let count: Int32
        let types: UnsafePointer<Oid>?
        let values: UnsafePointer<UnsafePointer<CChar>?>?
        let lengths: UnsafePointer<Int32>?
        let formats: UnsafePointer<Int32>?
    }

    /// Calls `body` with `params` laid out for libpq: bytes in binary format (sent as they
    /// are, no hex text to build and for the server to parse), everything else as
    /// NUL-terminated text.
    private static func withParameters<R>(
        _ params: [PostgresValue], _ body: (Parameters) throws(PostgresError) -> R
    ) throws(PostgresError) -> R {
        var storage: [CChar] = []
        var offsets: [Int?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        offsets.reserveCapacity(params.count)
        lengths.reserveCapacity(params.count)
        formats.reserveCapacity(params.count)
        for param in params {
            switch param {
            case .null:
                offsets.append(nil)
                lengths.append(0)
                formats.append(0)
            case .bytes(let bytes):
                guard bytes.count <= Int(Int32.max) else {
                    throw PostgresError(code: .query, message: "parameter $\(offsets.count + 1) is too large to send")
                }
                offsets.append(storage.count)
                lengths.append(Int32(bytes.count))
                formats.append(1)
                // UInt8 and CChar (Int8) may alias: the bytes are read in place, not rebound.
                bytes.withUnsafeBufferPointer { bytes in
                    storage.append(
                        contentsOf: UnsafeBufferPointer(
                            start: UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self),
                            count: bytes.count))
                }
                // A zero-length value still needs an address inside the storage.
                storage.append(0)
            default:
                let text = param.textEncoding ?? ""
                let added = text.utf8CString
                // utf8CString ends with the terminating NUL; another NUL before it cuts the text.
                guard !added.dropLast().contains(0) else {
                    throw PostgresError(code: .query, message: "parameter $\(offsets.count + 1) contains a NUL character")
                }
                offsets.append(storage.count)
                lengths.append(0)
                formats.append(0)
                storage.append(contentsOf: added)
            }
        }
        let types = params.map(\.typeOID)
        return try storage.withUnsafeBufferPointer { chars throws(PostgresError) in
            let values = offsets.map { offset in offset.map { UnsafePointer(chars.baseAddress! + $0) } }
            return try types.withUnsafeBufferPointer { types throws(PostgresError) in
                try values.withUnsafeBufferPointer { values throws(PostgresError) in
                    try lengths.withUnsafeBufferPointer { lengths throws(PostgresError) in
                        try formats.withUnsafeBufferPointer { formats throws(PostgresError) in
                            try body(
                                Parameters(
                                    count: Int32(params.count), types: types.baseAddress, values: values.baseAddress,
                                    lengths: lengths.baseAddress, formats: formats.baseAddress))
                        }
                    }
                }
            }
        }
    }

    /// Names of the statements prepared on this session, by SQL text.
    private struct StatementCache {
        static let limit = 256
        var names: [String: String] = [:]
        var nextNumber = 0

        /// The prepared statement's name for `sql`: the one it has (here or among `pending`,
        /// names given out but not yet recorded), or a new one (`isNew`, to prepare) while fewer
        /// than `limit` are taken; nil past that (run the text unprepared).
        mutating func name(for sql: String, pending: [String: String] = [:]) -> (name: String, isNew: Bool)? {
            if let known = names[sql] ?? pending[sql] { return (known, false) }
            guard names.count + pending.count < Self.limit else { return nil }
            defer { nextNumber += 1 }
            return ("swift_stmt_\(nextNumber)", true)
        }
    }
}
