import Foundation

/// The signed transaction the benchmark verifies: every field Apple documents for
/// `JWSTransactionDecodedPayload`, with values shaped like a real renewal under an offer, plus an
/// `advancedCommerceInfo` block. About 1.5 KB of JSON; a real signed transaction from the sandbox
/// (shared/fixtures) is 0.6 KB, so this is the heavier case for the JSON work.
enum TransactionPayload {
    static let bundleID = "com.example.subscriptions"
    static let transactionID = "2000001024998954"

    /// The JSON bytes, signed `signedDate` (milliseconds) and valid for a month after.
    static func json(signedDate: Int64) -> [UInt8] {
        let purchase = signedDate - 35_000
        let text = """
            {"transactionId":"\(transactionID)","originalTransactionId":"2000001024993299",\
            "webOrderLineItemId":"2000000113755461","bundleId":"\(bundleID)",\
            "productId":"com.example.subscriptions.pro.monthly","subscriptionGroupIdentifier":"21752814",\
            "purchaseDate":\(purchase),"originalPurchaseDate":\(purchase - 31_536_000_000),\
            "expiresDate":\(purchase + 2_592_000_000),"quantity":1,"type":"Auto-Renewable Subscription",\
            "appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","inAppOwnershipType":"PURCHASED",\
            "signedDate":\(signedDate),"offerType":2,\
            "offerIdentifier":"com.example.subscriptions.pro.winback.first-month-half-price",\
            "offerDiscountType":"PAY_AS_YOU_GO","offerPeriod":"P1M","environment":"Sandbox",\
            "transactionReason":"RENEWAL","storefront":"AUS","storefrontId":"143460","price":9990,"currency":"AUD",\
            "appTransactionId":"704897469903383919","isUpgraded":false,\
            "advancedCommerceInfo":{"requestReferenceId":"3f9c2d4e-8b1a-4c7d-9e2f-6a5b4c3d2e1f",\
            "taxCode":"C003-00-2","taxExclusivePrice":9082,"taxRate":"0.100","estimatedTax":908,"period":"P1M",\
            "descriptors":{"displayName":"Example Pro","description":"Everything in Example, with sync across \
            devices, larger attachments and priority support."},\
            "items":[{"SKU":"com.example.subscriptions.pro.monthly.sku-2025","displayName":"Example Pro (monthly)",\
            "description":"Monthly access to every Pro feature of Example on all of the account's devices.",\
            "price":9990,"offer":{"period":"P1M","periodCount":1,"price":4995,"reason":"WIN_BACK"}}]}}
            """
        return Array(text.utf8)
    }
}
