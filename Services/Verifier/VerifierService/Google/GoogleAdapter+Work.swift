import Foundation
import Wire

extension GoogleAdapter {
    /// What a recorded notification asks for, read back from its inbox entry (the raw payload
    /// is the notification's decoded `data` JSON): its package, event time and work.
    static func work(from entry: InboxEntry) -> (packageName: String, eventTime: Int64, work: Work)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(entry.rawPayload.utf8)) as? [String: Any],
            let package = object["packageName"] as? String
        else { return nil }
        let eventTime = Int64(object["eventTimeMillis"] as? String ?? "") ?? (object["eventTimeMillis"] as? Int64) ?? 0
        if let notification = object["subscriptionNotification"] as? [String: Any],
            let type = notification["notificationType"] as? Int, let token = notification["purchaseToken"] as? String
        {
            return (
                package, eventTime,
                .subscription(type: type, token: token, productID: notification["subscriptionId"] as? String ?? "")
            )
        }
        if let notification = object["oneTimeProductNotification"] as? [String: Any],
            let type = notification["notificationType"] as? Int, let token = notification["purchaseToken"] as? String
        {
            return (
                package, eventTime,
                .oneTimeProduct(type: type, token: token, productID: notification["sku"] as? String ?? "")
            )
        }
        if let notification = object["voidedPurchaseNotification"] as? [String: Any],
            let token = notification["purchaseToken"] as? String
        {
            return (package, eventTime, .voided(token: token, productType: notification["productType"] as? Int))
        }
        return (package, eventTime, .nothing)
    }
}
