// The members FlatJSON reads for the flat payloads, by the same names the synthesized Decodable
// conformances use (the property names). A member missing here is only skipped by FlatJSON, so
// every stored property of these types must be listed (ApplePayloadsFlatJSONTests compares the
// two decoders on payloads that set every field).

extension AppleTransaction: FlatJSON.Object {
    static let members: FlatJSON.Members<Self> = FlatJSON.members([
        ("transactionId", .string { $0.transactionId = $1 }),
        ("originalTransactionId", .string { $0.originalTransactionId = $1 }),
        ("webOrderLineItemId", .string { $0.webOrderLineItemId = $1 }),
        ("bundleId", .string { $0.bundleId = $1 }),
        ("productId", .string { $0.productId = $1 }),
        ("subscriptionGroupIdentifier", .string { $0.subscriptionGroupIdentifier = $1 }),
        ("purchaseDate", .integer { $0.purchaseDate = $1 }),
        ("originalPurchaseDate", .integer { $0.originalPurchaseDate = $1 }),
        ("expiresDate", .integer { $0.expiresDate = $1 }),
        ("quantity", .integer { $0.quantity = Int($1) }),
        ("type", .string { $0.type = $1 }),
        ("appAccountToken", .string { $0.appAccountToken = $1 }),
        ("inAppOwnershipType", .string { $0.inAppOwnershipType = $1 }),
        ("signedDate", .integer { $0.signedDate = $1 }),
        ("revocationReason", .integer { $0.revocationReason = Int($1) }),
        ("revocationDate", .integer { $0.revocationDate = $1 }),
        ("isUpgraded", .bool { $0.isUpgraded = $1 }),
        ("offerType", .integer { $0.offerType = Int($1) }),
        ("offerIdentifier", .string { $0.offerIdentifier = $1 }),
        ("environment", .string { $0.environment = $1 }),
        ("storefront", .string { $0.storefront = $1 }),
        ("storefrontId", .string { $0.storefrontId = $1 }),
        ("transactionReason", .string { $0.transactionReason = $1 }),
        ("currency", .string { $0.currency = $1 }),
        ("price", .integer { $0.price = $1 }),
        ("offerDiscountType", .string { $0.offerDiscountType = $1 }),
        ("appTransactionId", .string { $0.appTransactionId = $1 }),
        ("offerPeriod", .string { $0.offerPeriod = $1 }),
    ])
}

extension AppleRenewalInfo: FlatJSON.Object {
    static let members: FlatJSON.Members<Self> = FlatJSON.members([
        ("originalTransactionId", .string { $0.originalTransactionId = $1 }),
        ("productId", .string { $0.productId = $1 }),
        ("autoRenewProductId", .string { $0.autoRenewProductId = $1 }),
        ("autoRenewStatus", .integer { $0.autoRenewStatus = Int($1) }),
        ("expirationIntent", .integer { $0.expirationIntent = Int($1) }),
        ("isInBillingRetryPeriod", .bool { $0.isInBillingRetryPeriod = $1 }),
        ("gracePeriodExpiresDate", .integer { $0.gracePeriodExpiresDate = $1 }),
        ("priceIncreaseStatus", .integer { $0.priceIncreaseStatus = Int($1) }),
        ("offerType", .integer { $0.offerType = Int($1) }),
        ("offerIdentifier", .string { $0.offerIdentifier = $1 }),
        ("signedDate", .integer { $0.signedDate = $1 }),
        ("environment", .string { $0.environment = $1 }),
        ("recentSubscriptionStartDate", .integer { $0.recentSubscriptionStartDate = $1 }),
        ("renewalDate", .integer { $0.renewalDate = $1 }),
        ("currency", .string { $0.currency = $1 }),
        ("renewalPrice", .integer { $0.renewalPrice = $1 }),
        ("offerDiscountType", .string { $0.offerDiscountType = $1 }),
        ("eligibleWinBackOfferIds", .strings { $0.eligibleWinBackOfferIds = $1 }),
        ("appAccountToken", .string { $0.appAccountToken = $1 }),
        ("appTransactionId", .string { $0.appTransactionId = $1 }),
        ("offerPeriod", .string { $0.offerPeriod = $1 }),
    ])
}
