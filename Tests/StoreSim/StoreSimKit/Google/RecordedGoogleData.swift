public import Foundation

/// Real-time Developer Notifications captured from Google Play, each paired with the
/// `purchases.subscriptionsv2.get` answer Play gave for its token after it. Nothing is made up
/// or changed: the notifications are pushed as recorded and the answers served as recorded. A
/// pure value: the HTTP surface is `RecordedGoogleAPI`.
///
/// The input is a JSON object with `scenarios`, an array of objects each with the decoded
/// notification (`rtdn_event`, or `developerNotification`) and the answer (`current_state`, or
/// `subscriptionsv2_get_response`); other fields are ignored.
public struct RecordedGoogleData: Sendable {
    /// One recorded pair.
    public struct Scenario: Sendable, Hashable {
        /// The notification JSON as pushed (`message.data` decoded), keys sorted.
        public let notification: Data
        /// The `purchases.subscriptionsv2.get` answer, keys sorted.
        public let answer: Data
        /// The notification's `packageName`.
        public let packageName: String
        /// The token the notification names (a subscription or one-time product notification's
        /// `purchaseToken`).
        public let purchaseToken: String
        /// The notification's `eventTimeMillis`.
        public let eventTime: Int64
        /// `subscriptionNotification.notificationType`, when it is one.
        public let notificationType: Int?
    }

    /// The pairs in the order of the input.
    public let scenarios: [Scenario]

    /// Parses the JSON; throws `SimError(.badRequest)` naming the first pair that is not one.
    public init(json: Data) throws(SimError) {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
            let pairs = object["scenarios"] as? [[String: Any]]
        else { throw SimError(.badRequest, "the recorded Play data is not an object with a scenarios array") }
        var scenarios: [Scenario] = []
        for (index, pair) in pairs.enumerated() {
            guard let scenario = Self.scenario(pair) else {
                throw SimError(
                    .badRequest,
                    "recorded scenario \(index) has no notification with a package, a token and an event time, "
                        + "or no subscriptionsv2 answer")
            }
            scenarios.append(scenario)
        }
        self.scenarios = scenarios
    }

    /// Reads and parses the file at `path`.
    public init(contentsOfFile path: String) throws(SimError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SimError(.badRequest, "cannot read the recorded Play data at \(path)")
        }
        try self.init(json: data)
    }

    /// The package names the notifications name.
    public var packageNames: Set<String> { Set(scenarios.map(\.packageName)) }

    private static func scenario(_ pair: [String: Any]) -> Scenario? {
        guard let event = (pair["rtdn_event"] ?? pair["developerNotification"]) as? [String: Any],
            let answer = (pair["current_state"] ?? pair["subscriptionsv2_get_response"]) as? [String: Any],
            let packageName = event["packageName"] as? String,
            let eventTime = (event["eventTimeMillis"] as? String).flatMap({ Int64($0) })
                ?? (event["eventTimeMillis"] as? NSNumber)?.int64Value
        else { return nil }
        let subscription = event["subscriptionNotification"] as? [String: Any]
        let oneTime = event["oneTimeProductNotification"] as? [String: Any]
        guard let token = (subscription ?? oneTime)?["purchaseToken"] as? String,
            let notification = try? JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]),
            let answerData = try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])
        else { return nil }
        return Scenario(
            notification: notification, answer: answerData, packageName: packageName, purchaseToken: token,
            eventTime: eventTime, notificationType: (subscription?["notificationType"] as? NSNumber)?.intValue)
    }
}
