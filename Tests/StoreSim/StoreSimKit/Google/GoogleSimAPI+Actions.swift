import Foundation
import HTTP

/// The Play Developer API calls that change a purchase, with the paths, bodies and refusals
/// Play documents: `purchases.subscriptionsv2.revoke` and `.cancel`,
/// `purchases.subscriptions.defer`, `orders.refund`.
extension GoogleSimAPI {
    /// Registers the calls below `application` (`/androidpublisher/v3/applications/{package}`).
    func registerActions(on server: HTTPServer, application: String) {
        server.route("POST", "\(application)/purchases/subscriptionsv2/tokens/*") { [self] request in
            authorized(request) {
                let (token, verb) = try Self.verb(
                    try GoogleAPICall.segment(request.path, after: "\(application)/purchases/subscriptionsv2/tokens/"))
                let body = try Self.object(request)
                switch verb {
                case "revoke":
                    // Exactly one refund type; the simulator has no add-ons to refund item by item.
                    let context = body["revocationContext"] as? [String: Any] ?? [:]
                    let types = Set(context.keys).intersection(["fullRefund", "proratedRefund", "itemBasedRefund"])
                    guard types.count == 1, !types.contains("itemBasedRefund") else {
                        throw GoogleAPICall.Failure.google(
                            400, "INVALID_ARGUMENT", "revocationContext needs fullRefund or proratedRefund.")
                    }
                    try store.revokeByDeveloper(token)
                case "cancel":
                    let context = body["cancellationContext"] as? [String: Any] ?? [:]
                    guard let name = context["cancellationType"] as? String,
                        let type = GoogleSimStore.CancellationType(rawValue: name)
                    else {
                        throw GoogleAPICall.Failure.google(
                            400, "INVALID_ARGUMENT", "cancellationContext.cancellationType is required.")
                    }
                    try store.cancelByDeveloper(token, type: type)
                default:
                    throw GoogleAPICall.Failure.google(404, "NOT_FOUND", "Not found.")
                }
                return nil
            }
        }
        server.route("POST", "\(application)/orders/*") { [self] request in
            authorized(request) {
                let (orderID, verb) = try Self.verb(
                    try GoogleAPICall.segment(request.path, after: "\(application)/orders/"))
                guard verb == "refund" else { throw GoogleAPICall.Failure.google(404, "NOT_FOUND", "Not found.") }
                guard request.body.isEmpty else {
                    throw GoogleAPICall.Failure.google(400, "INVALID_ARGUMENT", "The request body must be empty.")
                }
                let revoke: Bool
                switch request.query["revoke"] {
                case nil, "false"?: revoke = false
                case "true"?: revoke = true
                case let other?:
                    throw GoogleAPICall.Failure.google(
                        400, "INVALID_ARGUMENT", "Invalid value for revoke: \(other.prefix(20))")
                }
                try store.refundOrder(orderID, revoke: revoke)
                return nil
            }
        }
    }

    /// `purchases.subscriptions.defer` of the product and token of `call`; the answer's
    /// `newExpiryTimeMillis`.
    func deferRenewal(_ request: HTTPRequest, product: String, token: String) throws -> [String: any Sendable] {
        let info = try Self.object(request)["deferralInfo"] as? [String: Any] ?? [:]
        func milliseconds(_ name: String) throws -> Int64 {
            switch info[name] {
            case let text as String: if let value = Int64(text) { return value }
            case let number as NSNumber: return number.int64Value
            default: break
            }
            throw GoogleAPICall.Failure.google(400, "INVALID_ARGUMENT", "deferralInfo.\(name) is required.")
        }
        let expiry = try store.deferRenewal(
            token, productID: product, expected: try milliseconds("expectedExpiryTimeMillis"),
            desired: try milliseconds("desiredExpiryTimeMillis"))
        return ["newExpiryTimeMillis": String(expiry)]
    }

    /// `{name}:{verb}` split at the last colon; a 404 without one.
    private static func verb(_ segment: String) throws -> (String, String) {
        guard let colon = segment.lastIndex(of: ":"), colon != segment.startIndex else {
            throw GoogleAPICall.Failure.google(404, "NOT_FOUND", "Not found.")
        }
        return (String(segment[..<colon]), String(segment[colon...].dropFirst()))
    }

    /// The request's JSON object body; a 400 for anything else.
    private static func object(_ request: HTTPRequest) throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            throw GoogleAPICall.Failure.google(400, "INVALID_ARGUMENT", "The request body is not a JSON object.")
        }
        return object
    }
}
