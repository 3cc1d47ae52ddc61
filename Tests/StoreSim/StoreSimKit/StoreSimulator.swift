import Foundation
public import HTTP

/// The simulator as one piece: the stores, their clock, the delivery of their notifications,
/// and the control surface a test or the demo scripts customers through (`/control/...`, JSON
/// in and out, answered after the notifications an action caused were delivered).
public final class StoreSimulator: Sendable {
    public let clock: SimClock
    public let apple: AppleSimStore
    public let appleDelivery: NotificationDelivery

    public init(clock: SimClock, apple: AppleSimStore, appleDelivery: NotificationDelivery) {
        self.clock = clock
        self.apple = apple
        self.appleDelivery = appleDelivery
    }

    /// Registers the control endpoints on `server`.
    public func registerControl(on server: HTTPServer) {
        server.route("GET", "/control/clock") { [clock] _ in .json("{\"now\":\(clock.now)}") }
        control(server, "/control/clock/advance") { body in
            let offset = try SimClock.offset(try Self.string(body, "by"))
            self.apple.advance(by: offset)
            return ["now": self.clock.now]
        }
        control(server, "/control/apple/buy") { body in
            let id = try self.apple.buy(
                productID: try Self.string(body, "productId"), appAccountToken: body["appAccountToken"] as? String,
                familyShared: body["familyShared"] as? Bool ?? false)
            return ["originalTransactionId": id]
        }
        let actions: [(String, @Sendable (AppleSimStore, String) throws -> Void)] = [
            ("cancel", { try $0.cancel($1) }), ("resubscribe", { try $0.resubscribe($1) }),
            ("fail-payment", { try $0.failPayment($1) }), ("recover", { try $0.recover($1) }),
            ("refund", { try $0.refund($1) }), ("reverse-refund", { try $0.reverseRefund($1) }),
            ("revoke-family-sharing", { try $0.revokeFamilySharing($1) }),
        ]
        for (name, action) in actions {
            control(server, "/control/apple/\(name)") { body in
                try action(self.apple, try Self.string(body, "transactionId"))
                return [:]
            }
        }
        control(server, "/control/apple/change-product") { body in
            try self.apple.changeProduct(try Self.string(body, "transactionId"), to: try Self.string(body, "productId"))
            return [:]
        }
        control(server, "/control/apple/faults") { body in
            self.appleDelivery.inject(
                NotificationDelivery.Faults(
                    drop: body["drop"] as? Int ?? 0, duplicate: body["duplicate"] as? Int ?? 0,
                    reorder: body["reorder"] as? Bool ?? false))
            return [:]
        }
        control(server, "/control/apple/notification-url") { body in
            guard let url = URL(string: try Self.string(body, "url")), url.scheme == "http" || url.scheme == "https"
            else { throw SimError(.badRequest, "url must be an http(s) URL") }
            self.appleDelivery.url = url
            return [:]
        }
        server.route("POST", "/control/apple/redeliver") { [appleDelivery] _ in
            Self.blocking { Self.report(await appleDelivery.redeliver()) }
        }
    }

    /// Delivers what the stores made since the last delivery.
    public func deliverOutbox() async -> [NotificationDelivery.Attempt] {
        let items = apple.takeOutbox().map { notification in
            let body = try! JSONSerialization.data(withJSONObject: ["signedPayload": notification.signedPayload])
            return (id: notification.uuid, body: body)
        }
        return await appleDelivery.deliver(items)
    }

    /// A POST endpoint: the JSON object body to `action`, then the outbox delivered; the answer
    /// is the action's fields and `notifications` (each id with its HTTP status, or null).
    private func control(
        _ server: HTTPServer, _ path: String,
        _ action: @escaping @Sendable ([String: Any]) throws -> [String: any Sendable]
    ) {
        server.route("POST", path) { request in
            let body: [String: Any]
            if request.body.isEmpty {
                body = [:]
            } else if let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] {
                body = object
            } else {
                return Self.failure(SimError(.badRequest, "the body is not a JSON object"))
            }
            let result: [String: any Sendable]
            do {
                result = try action(body)
            } catch let error as SimError {
                return Self.failure(error)
            } catch {
                return Self.failure(SimError(.badRequest, "\(error)"))
            }
            return Self.blocking {
                var answer = result
                answer["notifications"] = await self.deliverOutbox().map(Self.attempt)
                return Self.json(answer)
            }
        }
    }

    private static func attempt(_ attempt: NotificationDelivery.Attempt) -> [String: any Sendable] {
        ["id": attempt.id, "status": attempt.status.map { $0 as any Sendable } ?? NSNull()]
    }

    private static func report(_ attempts: [NotificationDelivery.Attempt]) -> HTTPResponse {
        json(["notifications": attempts.map(attempt)])
    }

    private static func json(_ object: [String: any Sendable]) -> HTTPResponse {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return failure(SimError(.conflict, "the answer is not JSON"))
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: [UInt8](data))
    }

    static func failure(_ error: SimError) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: ["error": error.message])) ?? Data()
        return HTTPResponse(status: error.status, headers: [("Content-Type", "application/json")], body: [UInt8](data))
    }

    static func string(_ body: [String: Any], _ field: String) throws(SimError) -> String {
        guard let value = body[field] as? String, !value.isEmpty else {
            throw SimError(.badRequest, "the body needs the string field \"\(field)\"")
        }
        return value
    }

    /// Runs async work from an HTTP handler thread (handlers are synchronous) and waits for it.
    private static func blocking(_ work: @escaping @Sendable () async -> HTTPResponse) -> HTTPResponse {
        let done = DispatchSemaphore(value: 0)
        let box = ResponseBox()
        Task {
            box.response = await work()
            done.signal()
        }
        done.wait()
        return box.response ?? failure(SimError(.conflict, "no answer"))
    }
}

/// Carries a handler's answer out of its task; written once before the semaphore is signalled.
private final class ResponseBox: @unchecked Sendable {
    var response: HTTPResponse?
}
