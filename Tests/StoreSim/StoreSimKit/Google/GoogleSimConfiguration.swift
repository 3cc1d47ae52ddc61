/// How the simulated Google Play behaves.
public struct GoogleSimConfiguration: Sendable {
    public var packageName: String
    /// The base plans' grace period (Google allows 0 to 30 days); 0 for none.
    public var gracePeriodDays = 7
    /// Account hold after grace (Google allows 0 to 30 days).
    public var accountHoldDays = 30
    /// How long a purchase may stay unacknowledged before Google refunds and revokes it.
    public var acknowledgementWindowMilliseconds: Int64 = 3 * 86_400_000
    /// The same for test purchases (license testers), which Google refunds within minutes.
    public var testAcknowledgementWindowMilliseconds: Int64 = 5 * 60_000
    /// Whether a purchase is a test purchase (`testPurchase`, `purchaseType` 0) unless the buy
    /// says otherwise.
    public var testPurchases = false
    public var products: [GoogleSimProduct]
    /// The one-time products on sale (none unless set).
    public var oneTimeProducts: [GoogleSimOneTimeProduct] = []

    public init(packageName: String, products: [GoogleSimProduct]) {
        self.packageName = packageName
        self.products = products
    }
}
