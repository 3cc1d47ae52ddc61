public import Foundation
import HTTPClient
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends a store's notifications to the URL the services listen on, with the faults a test asks
/// for: the next notifications dropped, duplicated or delivered in reverse order, or every
/// undelivered one sent again with its own id.
public final class NotificationDelivery: Sendable {
    /// Faults to apply to the next deliveries; each count is used up one notification at a time.
    public struct Faults: Sendable, Equatable {
        /// Notifications not sent at all (kept for `redeliver`).
        public var drop = 0
        /// Notifications sent more than once in a row (`copies` times each).
        public var duplicate = 0
        public var copies = 2
        /// Whether the next batch goes out newest first.
        public var reorder = false
        /// The last notifications of the next batch not sent at all (kept for `redeliver`).
        public var dropLast = 0

        public init(drop: Int = 0, duplicate: Int = 0, copies: Int = 2, reorder: Bool = false, dropLast: Int = 0) {
            self.drop = drop
            self.duplicate = duplicate
            self.copies = max(2, copies)
            self.reorder = reorder
            self.dropLast = max(0, dropLast)
        }
    }

    /// What happened to one notification.
    public struct Attempt: Sendable, Equatable {
        public let id: String
        /// The HTTP status, or nil when it was dropped or the request failed.
        public let status: Int?
    }

    /// One notification to send: its id, body and extra headers (a push's bearer token).
    public struct Item: Sendable {
        public let id: String
        public let body: Data
        public let headers: [String: String]

        public init(id: String, body: Data, headers: [String: String] = [:]) {
            self.id = id
            self.body = body
            self.headers = headers
        }
    }

    private struct State {
        var url: URL?
        var faults = Faults()
        /// Notifications not acknowledged with a 2xx yet, in the order they were made.
        var undelivered: [Item] = []
    }

    private let transport = HTTPClientTransport(requestTimeout: 10, maxResponseBytes: 64 * 1024)
    private let state: Mutex<State>

    /// A delivery to `url`; nil keeps everything undelivered (a store nobody listens to yet).
    public init(url: URL?) { state = Mutex(State(url: url)) }

    /// Where notifications go from now on.
    public var url: URL? {
        get { state.withLock { $0.url } }
        set { state.withLock { $0.url = newValue } }
    }

    public func inject(_ faults: Faults) { state.withLock { $0.faults = faults } }

    /// Sends `items` in order, under the faults in force.
    public func deliver(_ items: [Item]) async -> [Attempt] {
        let plan = state.withLock { state -> [(item: Item, send: Int)] in
            var batch = items
            if state.faults.reorder {
                batch.reverse()
                state.faults.reorder = false
            }
            let kept = max(0, batch.count - state.faults.dropLast)
            if !batch.isEmpty { state.faults.dropLast = 0 }
            return batch.enumerated().map { index, item in
                state.undelivered.append(item)
                if index >= kept { return (item, 0) }
                if state.faults.drop > 0 {
                    state.faults.drop -= 1
                    return (item, 0)
                }
                if state.faults.duplicate > 0 {
                    state.faults.duplicate -= 1
                    return (item, state.faults.copies)
                }
                return (item, 1)
            }
        }
        var attempts: [Attempt] = []
        for (item, send) in plan {
            if send == 0 { attempts.append(Attempt(id: item.id, status: nil)) }
            for _ in 0..<send { attempts.append(Attempt(id: item.id, status: await post(item))) }
        }
        return attempts
    }

    /// Hands over every notification not yet acknowledged, in the order they were made, and
    /// forgets them: whoever takes them delivers them (a benchmark posting them at its own pace).
    public func takeUndelivered() -> [Item] {
        state.withLock { state in
            defer { state.undelivered = [] }
            return state.undelivered
        }
    }

    /// Sends every notification not yet acknowledged again, with its own id (a store's retry).
    public func redeliver() async -> [Attempt] {
        let pending = state.withLock { $0.undelivered }
        var attempts: [Attempt] = []
        for item in pending { attempts.append(Attempt(id: item.id, status: await post(item))) }
        return attempts
    }

    private func post(_ item: Item) async -> Int? {
        guard let url = self.url else { return nil }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in item.headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = item.body
        guard case .success(let response) = await transport.perform(request) else { return nil }
        if (200..<300).contains(response.status) {
            state.withLock { $0.undelivered.removeAll { $0.id == item.id } }
        }
        return response.status
    }
}
