import Foundation
import Model
import RPC
import Wire

/// The subscriber view: what an account holds, each store's details in one shape, answered from
/// memory like `CheckAccess`.
extension EntitlementMethods {
    static let maxProductFilter = 100
    /// The App Store's page of the customer's subscriptions (it lists every app's).
    static let appleManagementURL = "https://apps.apple.com/account/subscriptions"
    static let googleManagementURL = "https://play.google.com/store/account/subscriptions"
    /// Stands in when no policy file is configured: store products grant no capability, the
    /// access rules are the defaults.
    static let noPolicy: ProductPolicy = {
        do { return try ProductPolicy(parsing: "") } catch {
            preconditionFailure("an empty policy is a policy: \(error)")
        }
    }()

    static func registerSubscriberView(
        on router: RPCRouter, view: EntitlementView, policies: PolicyStore?, now: @escaping @Sendable () -> Int64
    ) {
        // An account id and up to 100 product ids of 256 bytes.
        let limits = RPCMethodLimits(
            maxRequestBytes: 32 * 1024,
            budget: DecodeBudget(maxFields: maxProductFilter + 3, maxRepeated: maxProductFilter))
        router.inline(EntitlementRPC.getActiveSubscriptions, limits: limits) {
            (request: GetActiveSubscriptionsRequest) in
            try after(request.minPosition, view: view) {
                GetActiveSubscriptionsResponse(
                    subscriptions: try activeSubscriptions(request, view: view, policy: policies?.policy, now: now()))
            }
        }
        router.inline(EntitlementRPC.hasActiveSubscriptions, limits: limits) {
            (request: GetActiveSubscriptionsRequest) in
            try after(request.minPosition, view: view) {
                HasActiveSubscriptionsResponse(
                    hasActive: try activeSubscriptions(request, view: view, policy: policies?.policy, now: now())
                        .contains { $0.isActive })
            }
        }
    }

    /// Every subscription, purchase and grant of the account that has not ended at the instant
    /// asked for (optionally only those of the products named): one that gives access, and one
    /// in a state the store keeps alive without access under the policy's rules (billing retry,
    /// account hold, paused, pending). Expired, revoked and replaced ones are left out, as are
    /// consumables. In key order: by store and environment, then numeric store ids (Apple's) by
    /// value before text ones (Play's tokens) by their bytes.
    static func activeSubscriptions(
        _ request: GetActiveSubscriptionsRequest, view: EntitlementView, policy: ProductPolicy?, now: Int64
    ) throws(EntitlementError) -> [ActiveSubscription] {
        try checkAccount(request.accountID.utf8.count)
        guard request.productIDs.count <= maxProductFilter else {
            throw EntitlementError(
                .badRequest, "at most \(maxProductFilter) product_ids, got \(request.productIDs.count)")
        }
        for (index, productID) in request.productIDs.enumerated() where !(1...256).contains(productID.utf8.count) {
            throw EntitlementError(.badRequest, "product_ids[\(index)] must be 1 to 256 bytes")
        }
        let only = Set(request.productIDs)
        let at = request.atMilliseconds ?? now
        let policy = policy ?? noPolicy
        return view.withAccount(request.accountID, policy: policy) { tables, account in
            var found: [ActiveSubscription] = []
            guard let account else { return found }
            // By key, whatever order the view learned of them in.
            var holdings: [Holding] = []
            tables.forEachHolding(of: account) { holdings.append($0) }
            holdings.sort { tables.keyPrecedes($0, $1) }
            for holding in holdings {
                let product = tables.products[Int(holding.product)]
                guard only.isEmpty || only.contains(product.productID),
                    let decision = HoldingAccess.decision(holding, nil, in: tables, rules: policy.access, at: at)
                else { continue }
                let until: Int64?
                switch decision {
                case .allowed(let end): until = end
                case .denied(.stateDenies): until = nil
                case .denied: continue
                }
                let kind = holding.facts.productKind
                found.append(
                    ActiveSubscription(
                        key: tables.subscriptionKey(of: holding), productID: product.productID,
                        basePlanID: product.basePlanID, productKind: kind, state: holding.subscriptionState,
                        isActive: decision.isAllowed, accessUntilMilliseconds: until,
                        expirationMilliseconds: Holding.time(holding.expires), renewal: tables.renewal(of: holding),
                        ownership: holding.isFamilyShared ? .familyShared : .purchased,
                        managementURL: managementURL(
                            store: holding.store, kind: kind, productID: product.productID,
                            package: tables.bundleOrPackage(of: holding))))
            }
            return found
        }
    }

    /// Where the customer manages a subscription: the App Store's subscriptions page, or Play's
    /// for this product of this app; empty for a one-time purchase or a grant.
    static func managementURL(store: Store, kind: ProductKind?, productID: String, package: String?) -> String {
        switch store {
        case .apple:
            return kind == .autoRenewable ? appleManagementURL : ""
        case .google:
            // Play lists prepaid plans beside auto-renewing ones.
            guard kind == .autoRenewable || kind == .nonRenewing else { return "" }
            guard let package else { return googleManagementURL }
            var query = URLComponents()
            query.queryItems = [
                URLQueryItem(name: "sku", value: productID), URLQueryItem(name: "package", value: package),
            ]
            // `+` stands for a space in a query: the percent-encoding leaves it as it is.
            let encoded = (query.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
            return "\(googleManagementURL)?\(encoded)"
        case .promotional:
            return ""
        }
    }
}
