import Model
public import Observability

/// The view's gauges on the entitlement service's `/metrics` page, from counts the view keeps
/// as it applies changes (`ViewTables+Metrics`): no scan of the view per scrape.
extension EntitlementView {
    /// Writes `entitlement_active_subscriptions{store, state, product}` (held subscriptions not
    /// expired or revoked; `product` is the product id when `policy` grants something through
    /// it, else `other`) and `entitlement_access_beyond_verified{store}` (held subscriptions
    /// whose access under `policy`'s rules at `now`, epoch ms, runs past the end of their last
    /// verified period), for the App Store and Google Play.
    public func writeMetrics(policy: ProductPolicy?, now: Int64, into text: inout MetricsText) {
        let (held, beyond) = lock.read { _ in
            (
                tables.heldByKind.map { kind, count in (kind, tables.products[Int(kind.product)], count) },
                tables.accessBeyondVerified(rules: policy?.access ?? .default, now: now)
            )
        }
        var active: [Labels: Int] = [:]
        for (kind, product, count) in held {
            guard let store = Self.storeLabel(kind.store) else { continue }
            let state = SubscriptionState(rawValue: Int32(kind.state))
            guard state != .expired, state != .revoked else { continue }
            let named =
                policy.map {
                    !$0.capabilities(store: product.store, productID: product.productID, basePlanID: product.basePlanID)
                        .isEmpty
                } ?? false
            let labels = [
                "store": store, "state": state.map { "\($0)" } ?? "unspecified",
                "product": named ? product.productID : "other",
            ]
            active[labels, default: 0] += count
        }
        text.family(
            "entitlement_active_subscriptions", type: "gauge",
            help: "Subscriptions an account holds that are not expired or revoked, by store, state and product.")
        let order = { (labels: Labels) in [labels["store"] ?? "", labels["state"] ?? "", labels["product"] ?? ""] }
        for labels in active.keys.sorted(by: { order($0).lexicographicallyPrecedes(order($1)) }) {
            text.sample("entitlement_active_subscriptions", labels, Double(active[labels]!))
        }
        text.family(
            "entitlement_access_beyond_verified", type: "gauge",
            help:
                "Held subscriptions whose access runs past the end of their last verified period (grace, or a lapsed state the policy allows)."
        )
        for (store, name) in [(Store.apple, "apple"), (.google, "google")] {
            text.sample("entitlement_access_beyond_verified", ["store": name], Double(beyond[store] ?? 0))
        }
    }

    /// The `store` label of a store's subscriptions; nil for grants, which no store sells.
    static func storeLabel(_ store: Store) -> String? {
        switch store {
        case .apple: "apple"
        case .google: "google"
        default: nil
        }
    }
}
