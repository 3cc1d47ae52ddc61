import Foundation
import HTTPClient

extension GooglePlayDeveloperAPIClient {
    /// `/androidpublisher/v3/applications/{packageName}`. Throws `.invalidRequest` for a package
    /// name that is not a Java-style name of at least two dot-separated parts (ASCII letters,
    /// digits and `_`, each part starting with a letter), or longer than `maxPackageNameBytes`.
    static func applicationPath(_ packageName: String) throws(GooglePlayAPIError) -> String {
        guard isPackageName(packageName) else {
            throw GooglePlayAPIError(
                .invalidRequest, "\"\(packageName.printableASCII(limit: 80))\" is not an Android package name")
        }
        return "/androidpublisher/v3/applications/" + packageName
    }

    /// `…/purchases/products/{productId}/tokens/{token}`.
    static func productPath(_ packageName: String, _ productID: String, _ token: String) throws(GooglePlayAPIError)
        -> String
    {
        try applicationPath(packageName) + "/purchases/products/" + (try productSegment(productID, what: "product id"))
            + "/tokens/" + (try tokenSegment(token))
    }

    /// A purchase token as one percent-encoded path segment. Throws `.invalidRequest` for an empty
    /// token, one longer than `maxTokenBytes`, and `.` or `..`; the message never shows the token.
    static func tokenSegment(_ token: String) throws(GooglePlayAPIError) -> String {
        guard !token.isEmpty else { throw GooglePlayAPIError(.invalidRequest, "the purchase token is empty") }
        guard token.utf8.count <= maxTokenBytes else {
            throw GooglePlayAPIError(.invalidRequest, "the purchase token is longer than \(maxTokenBytes) bytes")
        }
        guard !PercentEncoding.isDotSegment(token) else {
            throw GooglePlayAPIError(.invalidRequest, "the purchase token is a dot segment")
        }
        return PercentEncoding.unreserved(token)
    }

    /// A product or subscription id (`what` names which in messages) as one percent-encoded path
    /// segment. Throws `.invalidRequest` for an empty id, one longer than `maxProductIDBytes`, and
    /// `.` or `..`.
    static func productSegment(_ id: String, what: String) throws(GooglePlayAPIError) -> String {
        guard !id.isEmpty else { throw GooglePlayAPIError(.invalidRequest, "the \(what) is empty") }
        guard id.utf8.count <= maxProductIDBytes else {
            throw GooglePlayAPIError(.invalidRequest, "the \(what) is longer than \(maxProductIDBytes) bytes")
        }
        guard !PercentEncoding.isDotSegment(id) else {
            throw GooglePlayAPIError(.invalidRequest, "the \(what) is a dot segment")
        }
        return PercentEncoding.unreserved(id)
    }

    /// Whether `name` is an Android application id: two or more parts separated by `.`, each an
    /// ASCII letter followed by ASCII letters, digits or `_`.
    static func isPackageName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= maxPackageNameBytes else { return false }
        let parts = name.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return false }
        func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        return parts.allSatisfy { part in
            guard let first = part.first, isLetter(first) else { return false }
            return part.allSatisfy {
                isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
            }
        }
    }

    // MARK: Configuration checks

    static func validate(_ configuration: Configuration) throws(GooglePlayAPIError) {
        let urls: [(name: String, url: URL?)] = [
            ("baseURL", configuration.baseURL), ("tokenURL", configuration.tokenURL),
        ]
        for (name, url) in urls {
            guard let url, !url.isHTTPSOrLoopbackHTTP else { continue }
            throw GooglePlayAPIError(
                .configuration, "\(name) \(url.absoluteString) is neither https nor http to a loopback address")
        }
        guard configuration.requestTimeout > .zero else {
            throw GooglePlayAPIError(.configuration, "requestTimeout must be positive")
        }
        guard configuration.maxAttempts >= 1, configuration.notFoundAttempts >= 1 else {
            throw GooglePlayAPIError(.configuration, "maxAttempts and notFoundAttempts must be at least 1")
        }
        guard configuration.baseBackoff >= .zero, configuration.maxBackoff >= .zero,
            configuration.notFoundRetryDelay >= .zero, configuration.accessTokenRenewalMargin >= .zero
        else {
            throw GooglePlayAPIError(.configuration, "durations must not be negative")
        }
        guard configuration.maxResponseBytes > 0, configuration.maxVoidedPurchasePages > 0 else {
            throw GooglePlayAPIError(.configuration, "maxResponseBytes and maxVoidedPurchasePages must be positive")
        }
    }
}
