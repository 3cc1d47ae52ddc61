extension Subscription {
    /// Whether `incoming` takes the place of `current` as a subscription's state. A total order
    /// that does not depend on which arrived first:
    /// 1. the later store time (the store's own signed or event time) wins;
    /// 2. at the same store time, the state that ends access sooner (`accessEnd`) wins;
    /// 3. then the smaller `contentHash` (the same content is the same state: it applies).
    public static func replaces(_ incoming: Subscription, _ current: Subscription) -> Bool {
        let incomingTime = incoming.storeTimeMilliseconds ?? Int64.min
        let currentTime = current.storeTimeMilliseconds ?? Int64.min
        if incomingTime != currentTime { return incomingTime > currentTime }
        let incomingEnd = incoming.accessEnd
        let currentEnd = current.accessEnd
        if incomingEnd != currentEnd { return incomingEnd < currentEnd }
        return incoming.contentHash <= current.contentHash
    }

    /// Where the state alone lets access end (for ordering only): `Int64.min` for a state that
    /// gives none, else the revocation, grace end or expiry, the earliest; `Int64.max` for none.
    var accessEnd: Int64 {
        switch state {
        case .active?, .cancelled?:
            min(expiresTimeMilliseconds ?? Int64.max, revokedTimeMilliseconds ?? Int64.max)
        case .gracePeriod?:
            min(
                graceExpiresTimeMilliseconds ?? expiresTimeMilliseconds ?? Int64.max,
                revokedTimeMilliseconds ?? Int64.max)
        default: Int64.min
        }
    }

    /// A stable 64-bit FNV-1a hash of what the store said (not what the ledger adds: the
    /// account, verification time, lineage and periods).
    public var contentHash: UInt64 {
        var hash = ContentHash()
        hash.add(key.storeID)
        hash.add(productID)
        hash.add(basePlanID)
        hash.add(offerID)
        hash.add(productKind?.rawValue)
        hash.add(state?.rawValue)
        hash.add(ownership?.rawValue)
        hash.add(purchaseTimeMilliseconds)
        hash.add(expiresTimeMilliseconds)
        hash.add(graceExpiresTimeMilliseconds)
        hash.add(revokedTimeMilliseconds)
        hash.add(revocationReason)
        hash.add(autoRenew ? 1 : 0)
        hash.add(autoRenewProductID)
        hash.add(acknowledged ? 1 : 0)
        hash.add(storeTimeMilliseconds)
        hash.add(replacesStoreID)
        hash.add(storeAccountRef)
        hash.add(latestOrderID)
        hash.add(offerType?.rawValue)
        hash.add(renewalOfferID)
        hash.add(renewalOfferType?.rawValue)
        hash.add(expirationReason?.rawValue)
        hash.add(inBillingRetry ? 1 : 0)
        hash.add(renewalTimeMilliseconds)
        hash.add(storefront)
        hash.add(priceMicros)
        hash.add(currency)
        // Fields added later count only when present, so earlier states hash as they did.
        for product in renewalOffProducts { hash.add(product) }
        if let installmentsCommitted {
            hash.add(installmentsCommitted)
            hash.add(installmentsRemaining)
        }
        if let autoResumeTimeMilliseconds { hash.add(autoResumeTimeMilliseconds) }
        return hash.value
    }
}
