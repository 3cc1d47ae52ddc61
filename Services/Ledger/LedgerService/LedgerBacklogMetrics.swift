import HTTP
public import Model
public import Observability
import Synchronization
import Wire

/// The ledger's backlog gauges, read when `/metrics` is rendered: `ledger_inbox_pending{store}`,
/// `ledger_inbox_oldest_pending_age_seconds{store}`, `google_acknowledgements_pending` and
/// `google_acknowledgement_oldest_pending_age_seconds`.
///
/// Each scrape runs one grouped read of the inbox rows that are pending or failed, through the
/// `inbox_by_status (status, received_ms)` index: it reads the backlog, never the processed rows
/// that make up the rest of the table, so a large ledger with a small backlog costs a scrape
/// next to nothing. Google acknowledgements owed are the inbox items the verifier queues for
/// them (notification id `ack-…`), told apart from notifications in the same read.
public final class LedgerBacklogMetrics: Sendable {
    /// One store's unprocessed items: how many, and when the oldest was received (epoch ms).
    public struct Backlog: Sendable, Equatable {
        public var count: Int64 = 0
        public var oldestReceived: Int64?
    }

    /// What one read found.
    public struct Reading: Sendable, Equatable {
        public var notifications: [Store: Backlog] = [:]
        public var acknowledgements = Backlog()
    }

    let ledger: Ledger
    /// How long a scrape waits for the read before it shows the last one.
    let readTimeout: Duration
    private let last = Mutex(Reading())

    public init(ledger: Ledger, readTimeout: Duration = .seconds(2)) {
        self.ledger = ledger
        self.readTimeout = readTimeout
    }

    /// Reads the backlog now.
    public func read() async throws -> Reading {
        let statuses = [InboxStatus.pending, .failed].map { SQLValue.int(Int64($0.rawValue)) }
        return try await ledger.transactions.read { tx in
            let rows = try tx.query(
                """
                SELECT store, CASE WHEN notification_id LIKE 'ack-%' THEN 1 ELSE 0 END AS ack,
                    COUNT(*) AS pending, MIN(received_ms) AS oldest
                FROM inbox WHERE status IN ($1, $2) GROUP BY store, ack
                """, statuses)
            var reading = Reading()
            for index in 0..<rows.count {
                guard let store = rows.int(index, "store").flatMap({ Store(rawValue: Int32($0)) }) else { continue }
                let backlog = Backlog(count: rows.int(index, "pending") ?? 0, oldestReceived: rows.int(index, "oldest"))
                if rows.int(index, "ack") == 1 {
                    reading.acknowledgements = backlog
                } else {
                    reading.notifications[store] = backlog
                }
            }
            return reading
        }
    }

    /// Writes the families; a read that fails or takes longer than `readTimeout` shows the last
    /// reading. Blocks: runs on the HTTP server's threads, never on the cooperative pool.
    public func write(into text: inout MetricsText) {
        if case .success(let reading)? = BlockingCall.run(timeout: readTimeout, { try await self.read() }) {
            last.withLock { $0 = reading }
        }
        Self.write(last.withLock { $0 }, now: ledger.now(), into: &text)
    }

    /// Writes `reading` as the families at the ledger's time `now` (epoch ms).
    static func write(_ reading: Reading, now: Int64, into text: inout MetricsText) {
        func age(_ backlog: Backlog?) -> Double {
            guard let oldest = backlog?.oldestReceived else { return 0 }
            return Double(max(0, now - oldest)) / 1000
        }
        let stores: [(Store, String)] = [(.apple, "apple"), (.google, "google")]
        text.family(
            "ledger_inbox_pending", type: "gauge", help: "Notifications recorded in the inbox and not yet processed.")
        for (store, name) in stores {
            text.sample("ledger_inbox_pending", ["store": name], Double(reading.notifications[store]?.count ?? 0))
        }
        text.family(
            "ledger_inbox_oldest_pending_age_seconds", type: "gauge",
            help: "How long ago the oldest notification not yet processed was recorded (0 when none).")
        for (store, name) in stores {
            text.sample(
                "ledger_inbox_oldest_pending_age_seconds", ["store": name], age(reading.notifications[store]))
        }
        text.family(
            "google_acknowledgements_pending", type: "gauge",
            help: "Google Play purchases owed an acknowledgement (refunded by Google after three days without one).")
        text.sample("google_acknowledgements_pending", [:], Double(reading.acknowledgements.count))
        text.family(
            "google_acknowledgement_oldest_pending_age_seconds", type: "gauge",
            help: "How long ago the oldest acknowledgement still owed was queued (0 when none).")
        text.sample("google_acknowledgement_oldest_pending_age_seconds", [:], age(reading.acknowledgements))
    }
}
