import Foundation
public import Model
public import Wire

/// Webhook delivery state, per endpoint: written by the entitlement instance holding the
/// endpoint's lease, so that a restart or another instance resumes where delivery was.
extension Ledger {
    /// The lease an endpoint's deliverer holds.
    public static func deliveryLease(_ endpoint: String) -> String { "webhook.\(endpoint)" }
    static let maxRetrying = 1000

    static func checkEndpoint(_ endpoint: String) throws {
        guard WebhookEndpointName.isValid(endpoint)
        else { throw LedgerError.invalidArgument("endpoint must be 1 to 64 of a-z, 0-9, _ and -") }
    }

    public func deliveryState(_ request: GetDeliveryStateRequest) async throws -> GetDeliveryStateResponse {
        try Self.checkEndpoint(request.endpoint)
        return try await read { tx in try Self.deliveryState(tx, request.endpoint) }
    }

    static func deliveryState(_ tx: any LedgerTransaction, _ endpoint: String) throws -> GetDeliveryStateResponse {
        let state = try tx.query(
            "SELECT delivered_through, disabled_ms FROM webhook_state WHERE endpoint = $1", [.text(endpoint)])
        let through = UInt64(state.int(0, "delivered_through") ?? 0)
        let rows = try tx.query(
            """
            SELECT attempt FROM webhook_attempts WHERE endpoint = $1 AND seq > $2 AND dead_ms IS NULL
            ORDER BY seq LIMIT $3
            """, [.text(endpoint), .int(Int64(clamping: through)), .int(Int64(maxRetrying))])
        return GetDeliveryStateResponse(
            deliveredThrough: through, disabledMilliseconds: state.int(0, "disabled_ms"),
            retrying: try (0..<rows.count).map {
                try LedgerStore.decode(DeliveryAttempt.self, rows.blob($0, "attempt"))
            })
    }

    public func recordDeliveries(_ request: RecordDeliveriesRequest) async throws -> RecordDeliveriesResponse {
        try await write(try recordDeliveriesWrite(request))
    }

    func recordDeliveriesWrite(_ request: RecordDeliveriesRequest) throws -> WriteBody<RecordDeliveriesResponse> {
        try Self.checkEndpoint(request.endpoint)
        try Self.check(request.owner, "owner", max: Self.maxCursorNameBytes)
        guard request.attempts.count <= Self.maxRetrying, request.delivered.count <= Self.maxRetrying else {
            throw LedgerError.invalidArgument("at most \(Self.maxRetrying) attempts and delivered entries per call")
        }
        for (index, attempt) in request.attempts.enumerated() {
            guard attempt.sequence > 0 else {
                throw LedgerError.invalidArgument("attempts[\(index)].sequence is missing")
            }
            try Self.checkOptional(attempt.lastError ?? "", "attempts[\(index)].last_error", max: 1024)
        }
        let at = now()
        return { tx in
            try Self.checkLease(tx, Self.deliveryLease(request.endpoint), owner: request.owner, at: at)
            try tx.query(
                """
                INSERT INTO webhook_state (endpoint, delivered_through, disabled_ms) VALUES ($1, $2, $3)
                ON CONFLICT (endpoint) DO UPDATE SET
                    delivered_through = CASE WHEN webhook_state.delivered_through < excluded.delivered_through
                        THEN excluded.delivered_through ELSE webhook_state.delivered_through END,
                    disabled_ms = COALESCE(excluded.disabled_ms, webhook_state.disabled_ms)
                """,
                [
                    .text(request.endpoint), .int(Int64(clamping: request.deliveredThrough)),
                    .int(request.disable ? at : nil),
                ])
            for var attempt in request.attempts {
                // Only a dead letter keeps its event: an attempt still retrying is read again from the log.
                if attempt.deadMilliseconds == nil { attempt.event = nil }
                try tx.enqueue(
                    """
                    INSERT INTO webhook_attempts (endpoint, seq, dead_ms, attempt) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (endpoint, seq) DO UPDATE SET dead_ms = $3, attempt = $4
                    """,
                    [
                        .text(request.endpoint), .int(Int64(clamping: attempt.sequence)),
                        .int(attempt.deadMilliseconds), .blob(attempt.serialized()),
                    ])
            }
            for delivered in request.delivered {
                try tx.enqueue(
                    "DELETE FROM webhook_attempts WHERE endpoint = $1 AND seq = $2 AND dead_ms IS NULL",
                    [.text(request.endpoint), .int(Int64(clamping: delivered.sequence))])
            }
            let through = try tx.query(
                "SELECT delivered_through FROM webhook_state WHERE endpoint = $1", [.text(request.endpoint)])
            return RecordDeliveriesResponse(deliveredThrough: UInt64(through.int(0, "delivered_through") ?? 0))
        }
    }

    /// Dead letters by endpoint, then sequence, a page at a time (each keeps its event, so a
    /// page also stops at the ledger's page bytes).
    public func deadLetters(_ request: ListDeadLettersRequest) async throws -> ListDeadLettersResponse {
        if let endpoint = request.endpoint { try Self.checkEndpoint(endpoint) }
        let limit = try Self.pageSize(request.limit)
        let after = try request.pageToken.map(PairCursor.init(token:))
        if let after { try Self.checkEndpoint(after.text) }
        return try await read { tx in
            let rows = try tx.query(
                """
                SELECT endpoint, attempt FROM webhook_attempts
                WHERE dead_ms IS NOT NULL AND ($1 = '' OR endpoint = $1) AND (endpoint > $2 OR (endpoint = $2 AND seq > $3))
                ORDER BY endpoint, seq LIMIT $4
                """,
                [
                    .text(request.endpoint ?? ""), .text(after?.text ?? ""), .int(after?.number ?? -1),
                    .int(Int64(limit) + 1),
                ])
            let letters = try Self.page(min(rows.count, Int(limit))) { index in
                let stored = rows.blob(index, "attempt")
                let letter = DeadLetter(
                    endpoint: rows.text(index, "endpoint") ?? "",
                    attempt: try LedgerStore.decode(DeliveryAttempt.self, stored))
                return (letter, stored?.count ?? 0)
            }
            var next: String?
            if rows.count > letters.count, let last = letters.last {
                next = PairCursor(number: Int64(clamping: last.attempt?.sequence ?? 0), text: last.endpoint).token
            }
            return ListDeadLettersResponse(deadLetters: letters, nextPageToken: next)
        }
    }

    public func replayDeliveries(_ request: ReplayDeliveriesRequest) async throws -> GetDeliveryStateResponse {
        try await write(try replayDeliveriesWrite(request))
    }

    func replayDeliveriesWrite(_ request: ReplayDeliveriesRequest) throws -> WriteBody<GetDeliveryStateResponse> {
        try Self.checkEndpoint(request.endpoint)
        return { tx in
            try tx.query(
                """
                INSERT INTO webhook_state (endpoint, delivered_through, disabled_ms) VALUES ($1, $2, NULL)
                ON CONFLICT (endpoint) DO UPDATE SET delivered_through = $2, disabled_ms = NULL
                """, [.text(request.endpoint), .int(Int64(clamping: request.afterSequence))])
            try tx.query(
                "DELETE FROM webhook_attempts WHERE endpoint = $1 AND seq > $2",
                [.text(request.endpoint), .int(Int64(clamping: request.afterSequence))])
            return try Self.deliveryState(tx, request.endpoint)
        }
    }
}
