import Foundation
public import HTTP

/// The simulator as one piece: both stores on one clock, the delivery of their notifications,
/// and the control surface a test or the demo scripts customers through (`/control/...`, JSON
/// in and out, answered after the notifications an action caused were delivered).
public final class StoreSimulator: Sendable {
    public let clock: SimClock
    public let apple: AppleSimStore
    public let appleFaults: APIFaults
    public let appleDelivery: NotificationDelivery
    public let google: GoogleSimStore
    public let googleAPI: GoogleSimAPI
    public let googleDelivery: NotificationDelivery

    public init(
        clock: SimClock, apple: AppleSimStore, appleFaults: APIFaults, appleDelivery: NotificationDelivery,
        googleAPI: GoogleSimAPI, googleDelivery: NotificationDelivery
    ) {
        self.clock = clock
        self.apple = apple
        self.appleFaults = appleFaults
        self.appleDelivery = appleDelivery
        self.google = googleAPI.store
        self.googleAPI = googleAPI
        self.googleDelivery = googleDelivery
    }

    /// Moves the shared clock by `offset` ms; both stores act on everything due meanwhile.
    public func advance(by offset: Int64) {
        let target = clock.now + max(0, offset)
        apple.process(until: target)
        google.process(until: target)
        clock.advance(by: offset)
    }

    /// Registers the control endpoints on `server`.
    public func registerControl(on server: HTTPServer) {
        server.route("GET", "/control/clock") { [clock] _ in .json("{\"now\":\(clock.now)}") }
        control(server, "/control/clock/advance") { body in
            self.advance(by: try SimClock.offset(try Self.string(body, "by")))
            return ["now": self.clock.now]
        }
        registerAppleControl(on: server)
        registerGoogleControl(on: server)
        for (store, faults) in [("apple", appleFaults), ("google", googleAPI.faults)] {
            // Sets the faults; without a count, only reports how many calls are still to fail.
            control(server, "/control/\(store)/api-faults") { body in
                guard let count = body["count"] as? Int else { return ["remaining": faults.remaining] }
                if let status = body["status"] as? Int, (400..<600).contains(status) {
                    faults.inject(count: count, .status(status))
                } else if let delay = body["delayMs"] as? Int, (1...60_000).contains(delay) {
                    faults.inject(count: count, .delay(milliseconds: delay))
                } else {
                    throw SimError(.badRequest, "api-faults needs an HTTP error status or a delayMs of 1 to 60000")
                }
                return ["remaining": faults.remaining]
            }
        }
        for (store, delivery) in [("apple", appleDelivery), ("google", googleDelivery)] {
            control(server, "/control/\(store)/faults") { body in
                delivery.inject(
                    NotificationDelivery.Faults(
                        drop: body["drop"] as? Int ?? 0, duplicate: body["duplicate"] as? Int ?? 0,
                        copies: body["copies"] as? Int ?? 2, reorder: body["reorder"] as? Bool ?? false))
                return [:]
            }
            control(server, "/control/\(store)/notification-url") { body in
                guard let url = URL(string: try Self.string(body, "url")), url.scheme == "http" || url.scheme == "https"
                else { throw SimError(.badRequest, "url must be an http(s) URL") }
                delivery.url = url
                return [:]
            }
            server.route("POST", "/control/\(store)/redeliver") { _ in
                Self.blocking { Self.json(["notifications": await delivery.redeliver().map(Self.attempt)]) }
            }
        }
    }

    private func registerAppleControl(on server: HTTPServer) {
        // A subscription (optionally with an "offer") or a one-time product; the answer names
        // the purchase by both ids (equal for a one-time product).
        control(server, "/control/apple/buy") { body in
            let id = try self.apple.buy(
                productID: try Self.string(body, "productId"), appAccountToken: body["appAccountToken"] as? String,
                familyShared: body["familyShared"] as? Bool ?? false, offer: try Self.offer(body["offer"]))
            return ["originalTransactionId": id, "transactionId": id]
        }
        let actions: [(String, @Sendable (AppleSimStore, String) throws -> Void)] = [
            ("cancel", { try $0.cancel($1) }), ("resubscribe", { try $0.resubscribe($1) }),
            ("fail-payment", { try $0.failPayment($1) }), ("recover", { try $0.recover($1) }),
            ("reverse-refund", { try $0.reverseRefund($1) }), ("decline-refund", { try $0.declineRefund($1) }),
            ("revoke-family-sharing", { try $0.revokeFamilySharing($1) }),
        ]
        for (name, action) in actions {
            control(server, "/control/apple/\(name)") { body in
                try action(self.apple, try Self.string(body, "transactionId"))
                return [:]
            }
        }
        // Any transaction of a chain, or a one-time purchase; "reason" is Apple's revocationReason.
        control(server, "/control/apple/refund") { body in
            try self.apple.refund(try Self.string(body, "transactionId"), reason: body["reason"] as? Int ?? 0)
            return [:]
        }
        control(server, "/control/apple/consumption-request") { body in
            try self.apple.requestConsumption(
                try Self.string(body, "transactionId"), reason: body["reason"] as? String ?? "UNINTENDED_PURCHASE")
            return [:]
        }
        control(server, "/control/apple/change-product") { body in
            try self.apple.changeProduct(try Self.string(body, "transactionId"), to: try Self.string(body, "productId"))
            return [:]
        }
        control(server, "/control/apple/redeem-offer") { body in
            guard let offer = try Self.offer(body["offer"]) else {
                throw SimError(.badRequest, "the body needs the object field \"offer\"")
            }
            try self.apple.redeemOffer(try Self.string(body, "transactionId"), offer)
            return [:]
        }
        // "transactionId" is the subscription's original transaction id, as Apple's endpoint takes.
        control(server, "/control/apple/extend-renewal") { body in
            guard let days = body["days"] as? Int else {
                throw SimError(.badRequest, "the body needs the integer field \"days\"")
            }
            let extended = try self.apple.extendRenewal(
                try Self.string(body, "transactionId"), days: days, reason: body["reason"] as? Int ?? 0)
            return ["effectiveDate": extended.effectiveDate, "webOrderLineItemId": extended.webOrderLineItemID]
        }
        // What a chain holds now: its transaction ids, oldest first, and its status.
        control(server, "/control/apple/transactions") { body in
            let id = try Self.string(body, "transactionId")
            var answer: [String: any Sendable] = [
                "originalTransactionId": self.apple.originalTransactionID(of: id) ?? id,
                "transactionIds": try self.apple.transactionIDs(of: id),
            ]
            if let status = try self.apple.status(of: id) { answer["status"] = status }
            return answer
        }
    }

    /// An offer written `{"type": 1-4, "discountType": "FREE_TRIAL"|"PAY_AS_YOU_GO"|"PAY_UP_FRONT",
    /// "identifier": "…", "period": "<n>d|m|y", "periods": n, "price": milliunits}`; nil when absent.
    static func offer(_ value: Any?) throws(SimError) -> AppleSimOffer? {
        guard let value else { return nil }
        guard let fields = value as? [String: Any] else { throw SimError(.badRequest, "offer must be an object") }
        guard let type = fields["type"] as? Int, let kind = AppleSimOffer.Kind(rawValue: type) else {
            throw SimError(
                .badRequest, "offer.type is 1 (introductory), 2 (promotional), 3 (offer code) or 4 (win-back)")
        }
        guard let text = fields["discountType"] as? String, let discount = AppleSimOffer.Discount(rawValue: text) else {
            throw SimError(.badRequest, "offer.discountType is FREE_TRIAL, PAY_AS_YOU_GO or PAY_UP_FRONT")
        }
        guard let periodText = fields["period"] as? String, let period = StoreSimLauncher.Settings.period(periodText)
        else { throw SimError(.badRequest, "offer.period is written <n>d, <n>m or <n>y") }
        return try AppleSimOffer(
            kind: kind, discount: discount, identifier: fields["identifier"] as? String, period: period,
            periods: fields["periods"] as? Int ?? 1, price: (fields["price"] as? NSNumber)?.int64Value ?? 0)
    }

    private func registerGoogleControl(on server: HTTPServer) {
        control(server, "/control/google/buy") { body in
            let token = try self.google.buy(
                productID: try Self.string(body, "productId"),
                obfuscatedAccountID: body["obfuscatedAccountId"] as? String,
                linkedPurchaseToken: body["linkedPurchaseToken"] as? String)
            return ["purchaseToken": token]
        }
        let actions: [(String, @Sendable (GoogleSimStore, String) throws -> Void)] = [
            ("cancel", { try $0.cancel($1) }), ("restart", { try $0.restart($1) }),
            ("fail-payment", { try $0.failPayment($1) }), ("recover", { try $0.recover($1) }),
            ("resume", { try $0.resume($1) }), ("refund", { try $0.refund($1) }),
        ]
        for (name, action) in actions {
            control(server, "/control/google/\(name)") { body in
                try action(self.google, try Self.string(body, "purchaseToken"))
                return [:]
            }
        }
        control(server, "/control/google/pause") { body in
            try self.google.pause(
                try Self.string(body, "purchaseToken"), length: try SimClock.offset(try Self.string(body, "for")))
            return [:]
        }
        control(server, "/control/google/change-product") { body in
            let token = try self.google.changeProduct(
                try Self.string(body, "purchaseToken"), to: try Self.string(body, "productId"),
                immediately: body["immediately"] as? Bool ?? true)
            return token.map { ["purchaseToken": $0] } ?? [:]
        }
    }

    /// Delivers what the stores made since the last delivery.
    public func deliverOutbox() async -> [NotificationDelivery.Attempt] {
        let appleItems = apple.takeOutbox().map { notification in
            NotificationDelivery.Item(
                id: notification.uuid,
                body: try! JSONSerialization.data(withJSONObject: ["signedPayload": notification.signedPayload]))
        }
        var googleItems: [NotificationDelivery.Item] = []
        for message in google.takeOutbox() {
            // The push key is the simulator's own RSA key: signing cannot fail but for a broken build.
            guard let (body, bearer) = try? googleAPI.push(message) else { continue }
            googleItems.append(.init(id: message.id, body: body, headers: ["Authorization": "Bearer \(bearer)"]))
        }
        return await appleDelivery.deliver(appleItems) + googleDelivery.deliver(googleItems)
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

    /// Runs async work from an HTTP handler thread (handlers are synchronous) and waits for it,
    /// a minute at most (a control call waits for the deliveries it makes).
    private static func blocking(_ work: @escaping @Sendable () async -> HTTPResponse) -> HTTPResponse {
        switch BlockingCall.run(timeout: .seconds(60), work) {
        case .success(let response)?: response
        case .failure(let error)?: failure(SimError(.conflict, "\(error)"))
        case nil: failure(SimError(.conflict, "no answer within 60 s"))
        }
    }
}
