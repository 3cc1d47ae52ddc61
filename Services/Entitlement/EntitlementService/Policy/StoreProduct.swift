public import Model

/// A product as the policy file names it: an Apple product id, or a Google product id with an
/// optional base plan (none matches every base plan of the product).
public struct StoreProduct: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The store that sells it.
    public var store: Store
    /// Apple `productId`; Google product (subscription) id.
    public var productID: String
    /// Google base plan id; `nil` for every base plan, and always `nil` for Apple.
    public var basePlanID: String?

    /// A product of `store`. For Apple, `basePlanID` must be `nil` (a policy refuses it otherwise).
    public init(store: Store, productID: String, basePlanID: String? = nil) {
        self.store = store
        self.productID = productID
        self.basePlanID = basePlanID
    }

    /// An Apple product.
    public static func apple(_ productID: String) -> StoreProduct { StoreProduct(store: .apple, productID: productID) }

    /// A Google product, for one base plan or (with `nil`) for all of them.
    public static func google(_ productID: String, basePlan: String? = nil) -> StoreProduct {
        StoreProduct(store: .google, productID: productID, basePlanID: basePlan)
    }

    /// Ordered by store, product id, then base plan (none first): the order of the canonical form.
    public static func < (lhs: StoreProduct, rhs: StoreProduct) -> Bool {
        if lhs.store != rhs.store { return lhs.store.rawValue < rhs.store.rawValue }
        if lhs.productID != rhs.productID { return lhs.productID < rhs.productID }
        return (lhs.basePlanID ?? "") < (rhs.basePlanID ?? "")
    }

    /// The product as a policy file line writes it: `apple ID`, `google ID` or `google ID:PLAN`.
    public var description: String {
        if let basePlanID { return "\(store) \(productID):\(basePlanID)" }
        return "\(store) \(productID)"
    }
}
