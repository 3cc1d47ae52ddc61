import EntitlementService
import Foundation
import Glibc
import HTTP
import Observability
import Synchronization

/// A webhook receiver on loopback (`url`) that answers `set`'s status and keeps what it got: each request's id, account, whether its signature verifies, and
/// the status it answered.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        let id: String
        let type: String?
        let account: String?
        let verified: Bool
        let status: Int
        /// The request as it came, for a verifier of another make.
        let headers: [String: String]
        let body: String
    }
    final class Record: Sendable {
        let answer = Mutex(200)
        /// How long each answer is held back, in milliseconds.
        let delay = Mutex(0)
        let received = Mutex<[Delivery]>([])
    }
    let record = Record()
    func set(_ status: Int) { record.answer.withLock { $0 = status } }
    func delay(milliseconds: Int) { record.delay.withLock { $0 = milliseconds } }
    var count: Int { record.received.withLock { $0.count } }
    var all: [Delivery] { record.received.withLock { $0 } }
    let server: HTTPServer

    init(secret text: String) throws {
        server = HTTPServer(host: "127.0.0.1", port: 0, logger: Logger(service: "receiver", sink: .capturing()))
        let secret = try WebhookSecret(text)
        server.route("POST", "/hooks") { [record] request in
            let id = request.headers["webhook-id"] ?? ""
            let timestamp = Int64(request.headers["webhook-timestamp"] ?? "") ?? 0
            let verified = secret.verifies(
                header: request.headers["webhook-signature"] ?? "", id: id, timestamp: timestamp, body: request.body
            )
            let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
            let status = record.answer.withLock { $0 }
            record.received.withLock {
                $0.append(
                    Delivery(
                        id: id, type: object?["type"] as? String, account: object?["accountId"] as? String,
                        verified: verified && object?["id"] as? String == id, status: status,
                        headers: request.headers.filter { $0.key.hasPrefix("webhook-") || $0.key == "traceparent" },
                        body: String(decoding: request.body, as: UTF8.self)))
            }
            // Recorded on arrival; a slow answer is held back after that.
            let delay = record.delay.withLock { $0 }
            if delay > 0 { usleep(UInt32(delay) * 1000) }
            return HTTPResponse(status: status)
        }
        try server.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(server.port)/hooks")! }
    func ok() -> [Delivery] { all.filter { $0.status == 200 } }
}

/// Processes a test starts and stops when it ends.
protocol StoppableStack { func stop() async }
extension EntitlementStack: StoppableStack {}
extension StoreSimStack: StoppableStack {}

extension WebhookReceiver {
    /// Runs `body`, then stops this receiver and `stack`, whether or not it threw.
    func run(beside stack: some StoppableStack, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            server.stop()
            await stack.stop()
            throw error
        }
        server.stop()
        await stack.stop()
    }
}
