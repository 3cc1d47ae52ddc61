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
    /// The faults of the Play Developer API being served (`googleAPI`'s, or a recorded API's).
    public let googleFaults: APIFaults
    public let googleDelivery: NotificationDelivery

    /// `googleFaults` defaults to `googleAPI.faults`; pass a recorded API's when that one is served.
    public init(
        clock: SimClock, apple: AppleSimStore, appleFaults: APIFaults, appleDelivery: NotificationDelivery,
        googleAPI: GoogleSimAPI, googleDelivery: NotificationDelivery, googleFaults: APIFaults? = nil
    ) {
        self.clock = clock
        self.apple = apple
        self.appleFaults = appleFaults
        self.appleDelivery = appleDelivery
        self.google = googleAPI.store
        self.googleAPI = googleAPI
        self.googleFaults = googleFaults ?? googleAPI.faults
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
        for (store, faults) in [("apple", appleFaults), ("google", googleFaults)] {
            // Sets the faults; a count of 0 clears what is left; without a count (or by GET), only
            // reports how many calls are still to fail.
            server.route("GET", "/control/\(store)/api-faults") { _ in Self.json(["remaining": faults.remaining]) }
            control(server, "/control/\(store)/api-faults") { body in
                guard let count = body["count"] as? Int else { return ["remaining": faults.remaining] }
                let matching = body["path"] as? String
                if count < 0 {
                    throw SimError(.badRequest, "\"count\" must be 0 or more")
                } else if count == 0 {
                    faults.clear()
                } else if let status = body["status"] as? Int, (400..<600).contains(status) {
                    faults.inject(count: count, .status(status), matching: matching)
                } else if let delay = body["delayMs"] as? Int, (1...60_000).contains(delay) {
                    faults.inject(count: count, .delay(milliseconds: delay), matching: matching)
                } else {
                    throw SimError(.badRequest, "api-faults needs an HTTP error status or a delayMs of 1 to 60000")
                }
                return ["remaining": faults.remaining]
            }
            // The API calls answered since the start, by path and in all.
            server.route("GET", "/control/\(store)/api-calls") { _ in
                let calls = faults.calls
                return Self.json(["total": calls.values.reduce(0, +), "byPath": calls])
            }
        }
        for (store, delivery) in [("apple", appleDelivery), ("google", googleDelivery)] {
            control(server, "/control/\(store)/faults") { body in
                delivery.inject(
                    NotificationDelivery.Faults(
                        drop: body["drop"] as? Int ?? 0, duplicate: body["duplicate"] as? Int ?? 0,
                        copies: body["copies"] as? Int ?? 2, reorder: body["reorder"] as? Bool ?? false,
                        dropLast: body["dropLast"] as? Int ?? 0))
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
            // Every undelivered notification as it would be posted (body and headers), handed over
            // and forgotten: the caller delivers them itself.
            server.route("POST", "/control/\(store)/take-undelivered") { _ in
                let items = delivery.takeUndelivered().map { item -> [String: any Sendable] in
                    ["id": item.id, "body": String(decoding: item.body, as: UTF8.self), "headers": item.headers]
                }
                return Self.json(["notifications": items])
            }
        }
    }

    /// `count` (1 to 10,000) purchases of `productId` at once, bought before the app's backend
    /// existed (as an import's subscribers were): their notifications are not sent. `make(i)`
    /// buys the i-th and names it.
    private func batch(
        _ server: HTTPServer, _ path: String, _ field: String,
        _ make: @escaping @Sendable (_ productID: String, _ index: Int, _ body: [String: Any]) throws -> String
    ) {
        server.route("POST", path) { request in
            guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
                return Self.failure(SimError(.badRequest, "the body is not a JSON object"))
            }
            guard let count = body["count"] as? Int, (1...10_000).contains(count) else {
                return Self.failure(SimError(.badRequest, "\"count\" must be 1 to 10000"))
            }
            do {
                let productID = try Self.string(body, "productId")
                let ids = try (0..<count).map { try make(productID, $0, body) }
                _ = self.apple.takeOutbox()
                _ = self.google.takeOutbox()
                return Self.json([field: ids])
            } catch let error as SimError {
                return Self.failure(error)
            } catch {
                return Self.failure(SimError(.badRequest, "\(error)"))
            }
        }
    }

    private func registerAppleControl(on server: HTTPServer) {
        // Many subscriptions at once, without notifications: the original transaction ids.
        batch(server, "/control/apple/buy-batch", "originalTransactionIds") { productID, _, _ in
            try self.apple.buy(productID: productID)
        }
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
        ]
        for (name, action) in actions {
            control(server, "/control/apple/\(name)") { body in
                try action(self.apple, try Self.string(body, "transactionId"))
                return [:]
            }
        }
        // "marking": "newest" or "in-force", the transaction the revocation date goes on while a
        // renewal charged early waits (drawn from the seed when left out).
        control(server, "/control/apple/revoke-family-sharing") { body in
            var mark: AppleSimRevocationMark?
            if let name = body["marking"] {
                guard let value = (name as? String).flatMap(AppleSimRevocationMark.init(rawValue:)) else {
                    throw SimError(.badRequest, "\"marking\" must be \"newest\" or \"in-force\"")
                }
                mark = value
            }
            try self.apple.revokeFamilySharing(try Self.string(body, "transactionId"), marking: mark)
            return [:]
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
        // What a chain holds now: its transaction ids, oldest first, each transaction's period
        // and revocation ("transactions"), and its status.
        control(server, "/control/apple/transactions") { body in
            let id = try Self.string(body, "transactionId")
            var answer: [String: any Sendable] = [
                "originalTransactionId": self.apple.originalTransactionID(of: id) ?? id,
                "transactionIds": try self.apple.transactionIDs(of: id),
                "transactions": try self.apple.transactionPeriods(of: id),
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
        // Many subscriptions at once, without notifications ("test" for test purchases): the tokens.
        batch(server, "/control/google/buy-batch", "purchaseTokens") { productID, _, body in
            try self.google.buy(productID: productID, test: body["test"] as? Bool)
        }
        // A subscription with optional "addOns" (more products on its billing period); "test"
        // makes it a test purchase. The answer names the token and its first order.
        control(server, "/control/google/buy") { body in
            let token = try self.google.buy(
                productID: try Self.string(body, "productId"), addOns: try Self.strings(body, "addOns"),
                obfuscatedAccountID: body["obfuscatedAccountId"] as? String,
                linkedPurchaseToken: body["linkedPurchaseToken"] as? String, test: body["test"] as? Bool)
            return ["purchaseToken": token, "orderId": try self.google.orders(of: token).first?.id ?? ""]
        }
        // A one-time product: "quantity" (default 1), "pending" for a slow payment method.
        control(server, "/control/google/buy-one-time") { body in
            let token = try self.google.buyOneTime(
                productID: try Self.string(body, "productId"), quantity: body["quantity"] as? Int ?? 1,
                obfuscatedAccountID: body["obfuscatedAccountId"] as? String, test: body["test"] as? Bool,
                pending: body["pending"] as? Bool ?? false)
            var answer: [String: any Sendable] = ["purchaseToken": token]
            if let order = try self.google.orders(of: token).first { answer["orderId"] = order.id }
            return answer
        }
        let actions: [(String, @Sendable (GoogleSimStore, String) throws -> Void)] = [
            ("cancel", { try $0.cancel($1) }), ("restart", { try $0.restart($1) }),
            ("fail-payment", { try $0.failPayment($1) }), ("recover", { try $0.recover($1) }),
            ("resume", { try $0.resume($1) }), ("refund", { try $0.refund($1) }), ("top-up", { try $0.topUp($1) }),
            ("complete-pending", { try $0.completePending($1) }), ("cancel-pending", { try $0.cancelPending($1) }),
        ]
        for (name, action) in actions {
            control(server, "/control/google/\(name)") { body in
                try action(self.google, try Self.string(body, "purchaseToken"))
                return [:]
            }
        }
        // A notification of a kind Play adds later: {"kind": "futureNotification"}.
        control(server, "/control/google/notify-new-kind") { body in
            try self.google.notifyNewKind(try Self.string(body, "kind"))
            return [:]
        }
        control(server, "/control/google/cancel-add-on") { body in
            try self.google.cancelAddOn(
                try Self.string(body, "purchaseToken"), productID: try Self.string(body, "productId"))
            return [:]
        }
        control(server, "/control/google/pause") { body in
            try self.google.pause(
                try Self.string(body, "purchaseToken"), length: try SimClock.offset(try Self.string(body, "for")))
            return [:]
        }
        // With "mode" (immediate, pending, deferred) the answer always names the new token; the
        // older "immediately" (default true) names it only for an immediate change.
        control(server, "/control/google/change-product") { body in
            let token = try Self.string(body, "purchaseToken")
            let productID = try Self.string(body, "productId")
            if let text = body["mode"] as? String {
                guard let mode = GoogleSimStore.ChangeMode(rawValue: text) else {
                    throw SimError(.badRequest, "mode is immediate, pending or deferred")
                }
                return ["purchaseToken": try self.google.changeProduct(token, to: productID, mode: mode)]
            }
            let next = try self.google.changeProduct(
                token, to: productID, immediately: body["immediately"] as? Bool ?? true)
            return next.map { ["purchaseToken": $0] } ?? [:]
        }
        // Any order of a subscription or a one-time purchase: "refundType" 1 (default) or 2 with
        // "quantity"; "revoke" (default true) ends access when it is the current order.
        control(server, "/control/google/void") { body in
            try self.google.void(
                orderID: try Self.string(body, "orderId"), refundType: body["refundType"] as? Int ?? 1,
                quantity: body["quantity"] as? Int, revoke: body["revoke"] as? Bool ?? true,
                source: body["voidedSource"] as? Int ?? 1, reason: body["voidedReason"] as? Int ?? 0)
            return [:]
        }
        // Every order of a token, oldest first.
        control(server, "/control/google/orders") { body in
            let orders = try self.google.orders(of: try Self.string(body, "purchaseToken")).map { order in
                var fields: [String: any Sendable] = [
                    "orderId": order.id, "productIds": order.productIDs, "chargedAt": order.chargedAt,
                    "start": order.start, "quantity": order.quantity, "voidedQuantity": order.voidedQuantity,
                ]
                fields["end"] = order.end
                fields["voidedAt"] = order.voidedAt
                return fields
            }
            return ["orders": orders]
        }
    }

    /// Delivers what the stores made since the last delivery.
    public func deliverOutbox() async -> [NotificationDelivery.Attempt] {
        let appleItems = apple.takeOutbox().map { notification in
            // The JSON object {"signedPayload": …}: a compact JWS is base64url and dots, nothing to escape.
            NotificationDelivery.Item(
                id: notification.uuid, body: Data("{\"signedPayload\":\"\(notification.signedPayload)\"}".utf8))
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

    /// An optional array of strings; empty when absent.
    static func strings(_ body: [String: Any], _ field: String) throws(SimError) -> [String] {
        guard let value = body[field] else { return [] }
        guard let strings = value as? [String] else {
            throw SimError(.badRequest, "\"\(field)\" must be an array of strings")
        }
        return strings
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
