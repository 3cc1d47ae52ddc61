import Model
import Wire

/// The view's records written out as answers: a holding's key, its renewal details, the whole
/// subscription as kept, and the C strings `CheckAccess` packs its answer from, lent in place.
extension ViewTables {
    /// Runs `body` with the holding's store id, product id and base plan id (nil for none) as
    /// C strings that live as long as the call.
    func withGrantCStrings<T>(
        _ holding: Holding, product: UInt32? = nil,
        _ body: (
            _ storeID: UnsafePointer<CChar>, _ productID: UnsafePointer<CChar>, _ basePlanID: UnsafePointer<CChar>?
        )
            -> T
    ) -> T {
        let names = productNames[Int(product ?? holding.product)]
        return texts.withCString(names.productID) { productID in
            func withPlan(_ storeID: UnsafePointer<CChar>) -> T {
                guard let plan = names.basePlanID else { return body(storeID, productID, nil) }
                return texts.withCString(plan) { body(storeID, productID, $0) }
            }
            if holding.hasTextID { return texts.withCString(holding.id) { withPlan($0) } }
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 24) { buffer in
                // The decimal digits of the number, NUL-terminated.
                var number = holding.id
                var digits = 0
                repeat {
                    buffer[22 - digits] = CChar(UInt8(ascii: "0") + UInt8(number % 10))
                    number /= 10
                    digits += 1
                } while number > 0
                buffer[23] = 0
                return withPlan(buffer.baseAddress! + 23 - digits)
            }
        }
    }

    /// The holding's key as the wire names it.
    func subscriptionKey(of holding: Holding) -> SubscriptionKey {
        SubscriptionKey(
            store: holding.store, environment: holding.environment,
            storeID: holding.hasTextID ? texts.string(holding.id) : String(holding.id))
    }

    /// The subscription as the view keeps it (`EntitlementView.subscriptions(of:)`): what access
    /// reads, its periods and status intervals; the successor's id stands as "(replaced)".
    func subscription(_ holding: Holding, account: String) -> Subscription {
        let product = products[Int(holding.product)]
        let facts = holding.facts
        var periods: [Period] = []
        var statuses: [StatusInterval] = []
        if holding.isPeriodic {
            func period(_ start: Int64, _ end: Int64, _ revoked: Int64, _ productIndex: UInt32, _ offer: OfferType?)
                -> Period
            {
                let named = products[Int(productIndex)]
                return Period(
                    periodID: "", productID: named.productID, basePlanID: named.basePlanID, startMilliseconds: start,
                    endMilliseconds: Holding.time(end), offerType: offer,
                    revokedTimeMilliseconds: Holding.time(revoked),
                    productKind: facts.productKind)
            }
            var next = holding.earlier
            while next != 0 {
                let record = periodRecords[Int(next) - 1]
                if let state = record.status {
                    statuses.append(
                        StatusInterval(
                            state: state, startMilliseconds: record.start, endMilliseconds: Holding.time(record.end)))
                } else {
                    periods.append(period(record.start, record.end, record.revoked, record.productIndex, record.offer))
                }
                next = record.next
            }
            periods.append(
                period(
                    holding.purchase, holding.expires, holding.revoked, holding.product,
                    PeriodRecord.offer(holding.offer)))
        }
        return Subscription(
            key: subscriptionKey(of: holding), accountID: account, productID: product.productID,
            basePlanID: product.basePlanID, productKind: facts.productKind, state: facts.state,
            purchaseTimeMilliseconds: facts.purchase, expiresTimeMilliseconds: facts.expires,
            graceExpiresTimeMilliseconds: facts.grace, revokedTimeMilliseconds: facts.revoked,
            // The successor's id is not kept, only that there is one.
            replacedByStoreID: facts.replaced ? "(replaced)" : nil, periods: periods, statusIntervals: statuses)
    }

    /// The holding's renewal details as `ListEntitlements` shows them for a grant of `product`
    /// (an add-on whose renewal is off shows that); nil for none.
    func renewal(of holding: Holding, product: UInt32? = nil) -> GrantRenewal? {
        guard holding.renewal != 0 else { return nil }
        let profile = renewalProfiles[Int(holding.renewal) - 1]
        // A profile kept for the app's id alone holds no renewal details.
        guard profile.renewal != GrantRenewal() || !profile.offProducts.isEmpty else { return nil }
        var renewal = profile.renewal
        if profile.dueAtEnd { renewal.renewalTimeMilliseconds = Holding.time(holding.expires) }
        renewal.graceExpiresTimeMilliseconds = Holding.time(holding.grace)
        if let product, profile.offProducts.contains(products[Int(product)].productID) {
            renewal.autoRenew = false
            renewal.renewalTimeMilliseconds = nil
        }
        return renewal
    }

    /// The app's bundle id or package name the holding's store data named, if any.
    func bundleOrPackage(of holding: Holding) -> String? {
        holding.renewal == 0 ? nil : renewalProfiles[Int(holding.renewal) - 1].bundleOrPackage
    }
}
