import Model
import Wire

/// The event log's rows, the access it announced, the leases, and webhook delivery state.
extension LedgerStore {
    /// Appends `event` to the log and answers its sequence; with `once`, nil (and nothing
    /// written) when an event of its id is logged already.
    func appendLogEvent(_ event: Event, once: Bool) throws -> UInt64? {
        let inserted = try tx.query(
            """
            INSERT INTO event_log (id, type, account_id, feed_position, event) VALUES ($1, $2, $3, $4, $5)
            \(once ? "ON CONFLICT (id) DO NOTHING " : "")RETURNING seq
            """,
            [
                .text(event.id), .text(event.type), .text(event.accountID), .int(Int64(clamping: event.position)),
                .blob(event.serialized()),
            ])
        return inserted.isEmpty ? nil : UInt64(inserted.int(0, "seq") ?? 0)
    }

    /// The log's newest sequence (0 when empty).
    func lastLogSequence() throws -> UInt64 {
        UInt64(try tx.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM event_log").int(0, "seq") ?? 0)
    }

    /// Log entries after `sequence`, in order, at most `limit`: each one's sequence, type and
    /// stored event.
    func logEntries(after sequence: UInt64, limit: UInt32) throws -> [(
        sequence: UInt64, type: String, stored: [UInt8]?
    )] {
        let rows = try tx.query(
            "SELECT seq, type, event FROM event_log WHERE seq > $1 ORDER BY seq LIMIT $2",
            [.int(Int64(clamping: sequence)), .int(Int64(limit))])
        return (0..<rows.count).map {
            (UInt64(rows.int($0, "seq") ?? 0), rows.text($0, "type") ?? "", rows.blob($0, "event"))
        }
    }

    /// Keeps the access announced to an account for a capability.
    func saveAnnouncedAccess(_ state: AnnouncedAccess) throws {
        try tx.enqueue(
            """
            INSERT INTO access_state (account_id, capability, state) VALUES ($1, $2, $3)
            ON CONFLICT (account_id, capability) DO UPDATE SET state = $3
            """, [.text(state.accountID), .text(state.capability), .blob(state.serialized())])
    }

    /// Forgets the access announced to an account for a capability.
    func deleteAnnouncedAccess(account: String, capability: String) throws {
        try tx.enqueue(
            "DELETE FROM access_state WHERE account_id = $1 AND capability = $2", [.text(account), .text(capability)])
    }

    /// The access announced, by account then capability, after (`account`, `capability`), at
    /// most `limit`.
    func announcedAccess(after account: String, _ capability: String, limit: Int) throws -> [AnnouncedAccess] {
        let rows = try tx.query(
            """
            SELECT account_id, capability, state FROM access_state
            WHERE account_id > $1 OR (account_id = $1 AND capability > $2)
            ORDER BY account_id, capability LIMIT $3
            """, [.text(account), .text(capability), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.decode(AnnouncedAccess.self, rows.blob($0, "state")) }
    }

    /// The newest change-feed position committed by `time`.
    func lastPosition(committedBy time: Int64) throws -> Int64 {
        try tx.query(
            "SELECT COALESCE(MAX(position), 0) AS position FROM changes WHERE committed_ms <= $1", [.int(time)]
        ).int(0, "position") ?? 0
    }

    // MARK: Leases

    /// Who holds lease `name` and until when, as stored (expired or not).
    func lease(_ name: String) throws -> (owner: String?, expires: Int64?) {
        let rows = try tx.query("SELECT owner, expires_ms FROM leases WHERE name = $1", [.text(name)])
        return (rows.text(0, "owner"), rows.int(0, "expires_ms"))
    }

    func saveLease(_ name: String, owner: String, expires: Int64) throws {
        try tx.query(
            """
            INSERT INTO leases (name, owner, expires_ms) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET owner = $2, expires_ms = $3
            """, [.text(name), .text(owner), .int(expires)])
    }

    // MARK: Webhook deliveries

    /// An endpoint's delivery state: delivered through which sequence, disabled when.
    func webhookState(_ endpoint: String) throws -> (deliveredThrough: UInt64, disabled: Int64?) {
        let state = try tx.query(
            "SELECT delivered_through, disabled_ms FROM webhook_state WHERE endpoint = $1", [.text(endpoint)])
        return (UInt64(state.int(0, "delivered_through") ?? 0), state.int(0, "disabled_ms"))
    }

    /// The endpoints with delivery state, by name.
    func webhookEndpoints() throws -> [String] {
        let rows = try tx.query("SELECT endpoint FROM webhook_state ORDER BY endpoint", [])
        return (0..<rows.count).compactMap { rows.text($0, "endpoint") }
    }

    /// An endpoint's attempts still retrying after `sequence`, in order, at most `limit`.
    func retryingAttempts(_ endpoint: String, after sequence: UInt64, limit: Int) throws -> [DeliveryAttempt] {
        let rows = try tx.query(
            """
            SELECT attempt FROM webhook_attempts WHERE endpoint = $1 AND seq > $2 AND dead_ms IS NULL
            ORDER BY seq LIMIT $3
            """, [.text(endpoint), .int(Int64(clamping: sequence)), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.decode(DeliveryAttempt.self, rows.blob($0, "attempt")) }
    }

    /// Dead letters put back to delivery (`redeliver`): attempts not given up on at or before
    /// `through` (the delivered position), by sequence, at most `limit`, each with its event.
    func redeliveringAttempts(_ endpoint: String, through sequence: UInt64, limit: Int) throws -> [DeliveryAttempt] {
        let rows = try tx.query(
            """
            SELECT attempt FROM webhook_attempts WHERE endpoint = $1 AND seq <= $2 AND dead_ms IS NULL
            ORDER BY seq LIMIT $3
            """, [.text(endpoint), .int(Int64(clamping: sequence)), .int(Int64(limit))])
        return try (0..<rows.count).map { try Self.decode(DeliveryAttempt.self, rows.blob($0, "attempt")) }
    }

    /// The dead letter `sequence` of `endpoint`, with its event; nil when there is none.
    func deadLetter(_ endpoint: String, sequence: UInt64) throws -> DeliveryAttempt? {
        let rows = try tx.query(
            "SELECT attempt FROM webhook_attempts WHERE endpoint = $1 AND seq = $2 AND dead_ms IS NOT NULL",
            [.text(endpoint), .int(Int64(clamping: sequence))])
        return rows.isEmpty ? nil : try Self.decode(DeliveryAttempt.self, rows.blob(0, "attempt"))
    }

    /// Enables a disabled endpoint (its receiver answered 410) without moving its position.
    func enableDeliveries(_ endpoint: String) throws {
        try tx.query("UPDATE webhook_state SET disabled_ms = NULL WHERE endpoint = $1", [.text(endpoint)])
    }

    /// Moves an endpoint's delivered sequence up to `through` (never down), and disables it at
    /// `disabledAt` when given (a disabled endpoint stays so).
    func raiseDelivered(_ endpoint: String, through: UInt64, disabledAt: Int64?) throws {
        try tx.query(
            """
            INSERT INTO webhook_state (endpoint, delivered_through, disabled_ms) VALUES ($1, $2, $3)
            ON CONFLICT (endpoint) DO UPDATE SET
                delivered_through = CASE WHEN webhook_state.delivered_through < excluded.delivered_through
                    THEN excluded.delivered_through ELSE webhook_state.delivered_through END,
                disabled_ms = COALESCE(excluded.disabled_ms, webhook_state.disabled_ms)
            """, [.text(endpoint), .int(Int64(clamping: through)), .int(disabledAt)])
    }

    func saveAttempt(_ endpoint: String, _ attempt: DeliveryAttempt) throws {
        try tx.enqueue(
            """
            INSERT INTO webhook_attempts (endpoint, seq, dead_ms, attempt) VALUES ($1, $2, $3, $4)
            ON CONFLICT (endpoint, seq) DO UPDATE SET dead_ms = $3, attempt = $4
            """,
            [
                .text(endpoint), .int(Int64(clamping: attempt.sequence)), .int(attempt.deadMilliseconds),
                .blob(attempt.serialized()),
            ])
    }

    /// Drops an attempt still retrying (not a dead letter).
    func deleteRetrying(_ endpoint: String, sequence: UInt64) throws {
        try tx.enqueue(
            "DELETE FROM webhook_attempts WHERE endpoint = $1 AND seq = $2 AND dead_ms IS NULL",
            [.text(endpoint), .int(Int64(clamping: sequence))])
    }

    /// Dead letters (of `endpoint` when given) after (`after.text`, `after.number`) by endpoint
    /// then sequence, at most `limit`: each one's endpoint and stored attempt.
    func deadLetters(endpoint: String?, after: PairCursor?, limit: Int) throws -> [(
        endpoint: String, stored: [UInt8]?
    )] {
        let rows = try tx.query(
            """
            SELECT endpoint, attempt FROM webhook_attempts
            WHERE dead_ms IS NOT NULL AND ($1 = '' OR endpoint = $1) AND (endpoint > $2 OR (endpoint = $2 AND seq > $3))
            ORDER BY endpoint, seq LIMIT $4
            """,
            [.text(endpoint ?? ""), .text(after?.text ?? ""), .int(after?.number ?? -1), .int(Int64(limit))])
        return (0..<rows.count).map { (rows.text($0, "endpoint") ?? "", rows.blob($0, "attempt")) }
    }

    /// Sets an endpoint back to delivered through `sequence`, enabled, with no attempt after it.
    func resetDeliveries(_ endpoint: String, after sequence: UInt64) throws {
        try tx.query(
            """
            INSERT INTO webhook_state (endpoint, delivered_through, disabled_ms) VALUES ($1, $2, NULL)
            ON CONFLICT (endpoint) DO UPDATE SET delivered_through = $2, disabled_ms = NULL
            """, [.text(endpoint), .int(Int64(clamping: sequence))])
        try tx.query(
            "DELETE FROM webhook_attempts WHERE endpoint = $1 AND seq > $2",
            [.text(endpoint), .int(Int64(clamping: sequence))])
    }
}
