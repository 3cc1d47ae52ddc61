extension GoogleSimStore {
    /// A purchase of `quantity` units of the one-time product `productID`; returns its purchase
    /// token. Purchased now (one-time RTDN 1), or with `pending` paid by a slow method: then it
    /// reads `purchaseState` 2 with no order until `completePending` or `cancelPending`. `test`
    /// overrides the configuration's `testPurchases`. Throws `.notFound` for an unknown product,
    /// `.badRequest` for a quantity below 1.
    public func buyOneTime(
        productID: String, quantity: Int = 1, obfuscatedAccountID: String? = nil, test: Bool? = nil,
        pending: Bool = false
    ) throws(SimError) -> String {
        guard configuration.oneTimeProducts.contains(where: { $0.id == productID }) else {
            throw SimError(.notFound, "no one-time product \(productID)")
        }
        guard quantity >= 1 else { throw SimError(.badRequest, "the quantity is at least 1") }
        return try change { state, now throws(SimError) in
            let token = Self.newToken()
            state.oneTime[token] = OneTimePurchase(
                token: token, productID: productID, quantity: quantity, purchaseTime: now,
                purchaseState: pending ? 2 : 0, orderID: Self.newOrderBase(&state), order: nil,
                obfuscatedAccountID: obfuscatedAccountID, test: test ?? configuration.testPurchases)
            if pending {
                // Whether Play notifies a purchase still pending is not certain: the harsher case,
                // ONE_TIME_PRODUCT_PURCHASED now (the backend must read purchaseState 2 and grant
                // nothing) and again when the payment arrives.
                emitOneTime(&state, token, 1, at: now)
            } else {
                try completeOneTime(&state, token, at: now)
            }
            return token
        }
    }

    /// The app acknowledges a one-time purchase (`purchases.products.acknowledge`). Throws
    /// `.notFound` for an unknown token, `.badRequest` when it is not a purchase of `productID`,
    /// `.conflict` for one that is pending or cancelled.
    func acknowledgeProduct(_ token: String, productID: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            try Self.payableOneTime(token, productID, in: state)
            state.oneTime[token]!.acknowledged = true
        }
    }

    /// The app consumes a one-time purchase (`purchases.products.consume`); a consumed purchase
    /// counts as acknowledged. Throws as `acknowledgeProduct` does.
    func consumeProduct(_ token: String, productID: String) throws(SimError) {
        try change { state, _ throws(SimError) in
            try Self.payableOneTime(token, productID, in: state)
            state.oneTime[token]!.consumed = true
        }
    }

    /// `ProductPurchase` for `token`, as `purchases.products.get` answers it now.
    func productPurchase(_ token: String, productID: String) throws(SimError) -> [String: any Sendable] {
        try change { state, _ throws(SimError) in
            guard let purchase = state.oneTime[token] else {
                throw SimError(.notFound, "no one-time purchase token \(token)")
            }
            guard purchase.productID == productID else {
                throw SimError(.badRequest, "the token is not a purchase of \(productID)")
            }
            var body: [String: any Sendable] = [
                "kind": "androidpublisher#productPurchase", "purchaseTimeMillis": String(purchase.purchaseTime),
                "purchaseState": purchase.purchaseState, "consumptionState": purchase.consumed ? 1 : 0,
                "acknowledgementState": purchase.acknowledged ? 1 : 0, "regionCode": "US",
            ]
            // A pending purchase has no order id yet (the Billing Library leaves it empty too).
            if let order = purchase.order {
                body["orderId"] = order.id
                if purchase.quantity > 1 { body["refundableQuantity"] = order.quantity - order.voidedQuantity }
            }
            // Google: "If not present, the quantity is 1": absent for one unit, the harsher case.
            if purchase.quantity > 1 { body["quantity"] = purchase.quantity }
            // purchaseType is absent for a real purchase and 0 for a test one.
            if purchase.test { body["purchaseType"] = 0 }
            if let account = purchase.obfuscatedAccountID { body["obfuscatedExternalAccountId"] = account }
            return body
        }
    }

    // MARK: Changes

    /// The one-time purchase `token` is paid now: its order, purchaseState 0, RTDN 1.
    func completeOneTime(_ state: inout State, _ token: String, at now: Int64) throws(SimError) {
        guard var purchase = state.oneTime[token], purchase.order == nil, purchase.purchaseState != 1 else {
            throw SimError(.conflict, "the purchase is not pending")
        }
        purchase.order = Order(
            id: purchase.orderID, purchaseToken: token, productIDs: [purchase.productID], chargedAt: now, start: now,
            end: nil, quantity: purchase.quantity)
        purchase.purchaseState = 0
        state.oneTime[token] = purchase
        emitOneTime(&state, token, 1, at: now)
    }

    /// The pending one-time purchase `token` is dropped: purchaseState 1, RTDN 2.
    func cancelOneTime(_ state: inout State, _ token: String, at now: Int64) throws(SimError) {
        guard state.oneTime[token]?.purchaseState == 2 else { throw SimError(.conflict, "the purchase is not pending") }
        state.oneTime[token]!.purchaseState = 1
        emitOneTime(&state, token, 2, at: now)
    }

    /// Nobody acknowledged or consumed the one-time purchase in time: Google refunds it.
    func refundUnacknowledged(_ state: inout State, _ token: String, at now: Int64) {
        voidOneTime(&state, token, units: nil, revoke: true, at: now, source: 2, reason: 8)
    }

    private static func payableOneTime(_ token: String, _ productID: String, in state: State) throws(SimError) {
        guard let purchase = state.oneTime[token] else { throw SimError(.notFound, "no one-time purchase \(token)") }
        guard purchase.productID == productID else {
            throw SimError(.badRequest, "the token is not a purchase of \(productID)")
        }
        guard purchase.purchaseState == 0 else { throw SimError(.conflict, "the purchase is pending or cancelled") }
    }
}
