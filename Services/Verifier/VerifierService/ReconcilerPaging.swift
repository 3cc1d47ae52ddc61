import Clients
import Foundation
import Model
import Wire

/// The reconcilers' walks over the ledger's paged lists, each bounded per pass, and their pulls
/// of a store's feed since a ledger cursor.
enum ReconcilerPaging {
    /// Runs `pull` over the window from the ledger cursor `name` to `now` (taking `overlap` ms
    /// again, which the inbox and the ledger answer as duplicates; `firstLookback` ms when the
    /// cursor is new; never further back than `maxLookback`, a start the store refuses: the part
    /// left out goes to `onGap`), then moves the cursor to `now`. Throws, leaving the cursor,
    /// when the ledger or `pull` fails.
    static func sinceCursor(
        _ ledger: any LedgerClientProtocol, _ name: String, now: Int64, overlap: Int64, firstLookback: Int64,
        maxLookback: Int64 = .max, _ pull: (_ start: Date, _ end: Date) async throws -> Void,
        onGap: (_ skippedMilliseconds: Int64) -> Void = { _ in }
    ) async throws {
        let cursor = try await ledger.cursor(name)
        var start = cursor.value > 0 ? cursor.value - overlap : now - firstLookback
        if maxLookback != .max, start < now - maxLookback {
            // Older than the store lists: never a cursor stuck on a start the store refuses.
            if cursor.value > 0 { onGap(now - maxLookback - start) }
            start = now - maxLookback
        }
        try await pull(
            Date(timeIntervalSince1970: Double(start) / 1000), Date(timeIntervalSince1970: Double(now) / 1000))
        _ = try await ledger.advanceCursor(name, to: now)
    }

    /// Calls `body` with the store's inbox entries that need another try, page by page: the
    /// failed ones, and pending ones received more than `pendingGrace` ms before `now` (their
    /// processing was cut short), at most `limit` of them. Throws when the ledger cannot list.
    static func staleInbox(
        _ ledger: any LedgerClientProtocol, store: Store, now: Int64, pendingGrace: Int64, limit: Int,
        _ body: (InboxEntry) async -> Void
    ) async throws {
        var token: String?
        var handled = 0
        repeat {
            let page = try await ledger.listInbox(ListInboxRequest(store: store, pageToken: token))
            for entry in page.entries where handled < limit {
                let old = (entry.receivedTimeMilliseconds ?? 0) < now - pendingGrace
                guard entry.status == .failed || old else { continue }
                handled += 1
                await body(entry)
            }
            token = page.nextPageToken
        } while token != nil && handled < limit
    }

    /// Calls `body` once with each subscription the queries list, page by page, at most `limit`
    /// different ones over all the queries. Throws when the ledger cannot list.
    static func eachSubscription(
        _ ledger: any LedgerClientProtocol, matching queries: [ListSubscriptionsRequest], limit: Int,
        _ body: (Subscription) async -> Void
    ) async throws {
        var seen: Set<SubscriptionKey> = []
        for query in queries {
            var request = query
            repeat {
                let page = try await ledger.listSubscriptions(request)
                for subscription in page.subscriptions where seen.count < limit {
                    guard seen.insert(subscription.key).inserted else { continue }
                    await body(subscription)
                }
                request.pageToken = page.nextPageToken
            } while request.pageToken != nil && seen.count < limit
        }
    }
}
