import BenchSupport
import Foundation

/// One store as the benchmark drives it: its simulator paths, its accounts and where its
/// notifications are posted.
struct Store: Sendable {
    let name: String
    let product: String
    let idField: String
    let notificationPath: String

    static let apple = Store(
        name: "apple", product: "com.example.pro.monthly", idField: "originalTransactionIds",
        notificationPath: "/apple/notifications/sandbox")
    static let google = Store(
        name: "google", product: "pro_sub", idField: "purchaseTokens", notificationPath: "/google/rtdn")

    func account(_ index: Int) -> String { "\(name)-\(index)" }

    /// RestorePurchases for the `index`-th subscription: links it to its account.
    func restore(_ id: String, index: Int) -> [String: Any] {
        let key = "link-\(account(index))"
        if name == "apple" { return ["accountId": account(index), "appleTransactionIds": [id], "idempotencyKey": key] }
        return [
            "accountId": account(index), "idempotencyKey": key,
            "googlePurchases": [["packageName": "com.example.app", "productId": product, "purchaseToken": id]],
        ]
    }
}

/// A notification taken from the simulator, to post ourselves.
struct StoreNotification: Sendable {
    let body: Data
    let headers: [String: String]
}

/// Runs `work(worker, i)` for i in 0..<count on `concurrency` workers (a closed loop).
func closedLoop(
    _ count: Int, concurrency: Int,
    _ work: @escaping @Sendable (_ worker: Int, _ index: Int) async throws(BenchError) -> Void
) async throws(BenchError) {
    let next = Shared(0)
    let failure = Shared<BenchError?>(nil)
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<concurrency {
            group.addTask {
                while true {
                    let index = next.withLock { value in
                        defer { value += 1 }
                        return value
                    }
                    guard index < count, failure.withLock({ $0 == nil }) else { return }
                    do throws(BenchError) { try await work(worker, index) } catch {
                        failure.withLock { $0 = error }
                        return
                    }
                }
            }
        }
    }
    if let error = failure.withLock({ $0 }) { throw error }
}

/// Nearest-rank percentile of `values` (sorted) in milliseconds.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
}

/// An API path with the transaction id or token it names replaced by `{id}`.
func endpoint(_ path: String) -> String {
    path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
        segment.count > 30 || (segment.count > 6 && segment.allSatisfy(\.isNumber)) ? "{id}" : String(segment)
    }.joined(separator: "/")
}

extension StoreNotification {
    /// The subscription it is about: the App Store's original transaction id (in the signed
    /// transaction inside the signed payload) or Play's purchase token (in the push's data).
    var subject: String? {
        guard let body = Self.object(body) else { return nil }
        if let signed = body["signedPayload"] as? String {
            guard let data = Self.jwsPayload(signed)?["data"] as? [String: Any],
                let transaction = (data["signedTransactionInfo"] as? String).flatMap(Self.jwsPayload)
            else { return nil }
            return transaction["originalTransactionId"] as? String
        }
        guard let message = body["message"] as? [String: Any],
            let data = (message["data"] as? String).flatMap({ Data(base64Encoded: $0) }),
            let notification = Self.object(data)?["subscriptionNotification"] as? [String: Any]
        else { return nil }
        return notification["purchaseToken"] as? String
    }

    private static func object(_ data: Data) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    /// The JSON payload of a compact JWS (not verified: the verifier does that).
    private static func jwsPayload(_ jws: String) -> [String: Any]? {
        let parts = jws.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Data(base64Encoded: text).flatMap(object)
    }
}
