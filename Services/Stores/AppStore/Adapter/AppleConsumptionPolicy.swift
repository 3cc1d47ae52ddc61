public import Foundation
import Model

/// What the verifier answers Apple's CONSUMPTION_REQUEST with by itself: read from the JSON file
/// `APPLE_CONSUMPTION_POLICY_FILE`, such as
///
///     {"answer_automatically": true, "customer_consented": true, "delivery_status": "DELIVERED",
///      "sample_content_provided": false, "refund_preference": "DECLINE"}
///
/// `customer_consented` says the app has every customer's consent to share consumption data (its
/// terms ask for it); without it nothing is sent, so an automatic policy must have it.
/// `consumption_percentage` (milliunits) goes with consumables and other one-time products only.
public struct AppleConsumptionPolicy: Sendable, Hashable, Decodable {
    public var answerAutomatically: Bool
    public var customerConsented: Bool
    public var deliveryStatus: String
    public var sampleContentProvided: Bool
    public var refundPreference: String?
    public var consumptionPercentage: Int?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case answerAutomatically = "answer_automatically"
        case customerConsented = "customer_consented"
        case deliveryStatus = "delivery_status"
        case sampleContentProvided = "sample_content_provided"
        case refundPreference = "refund_preference"
        case consumptionPercentage = "consumption_percentage"
    }

    public init(
        answerAutomatically: Bool, customerConsented: Bool, deliveryStatus: String, sampleContentProvided: Bool,
        refundPreference: String? = nil, consumptionPercentage: Int? = nil
    ) {
        self.answerAutomatically = answerAutomatically
        self.customerConsented = customerConsented
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
        self.consumptionPercentage = consumptionPercentage
    }

    /// The policy in `data`, checked: every key one it knows, the values Apple takes, and an
    /// automatic policy only with consent. Throws a message saying what to fix.
    public static func parse(_ data: Data) throws(PolicyError) -> AppleConsumptionPolicy {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw PolicyError(problem: "is not a JSON object")
        }
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw PolicyError(
                problem: "has \"\(unknown)\", which is not one of " + known.sorted().joined(separator: ", "))
        }
        let policy: AppleConsumptionPolicy
        do {
            policy = try JSONDecoder().decode(AppleConsumptionPolicy.self, from: data)
        } catch {
            throw PolicyError(
                problem: "needs answer_automatically, customer_consented, delivery_status and "
                    + "sample_content_provided, each of its type")
        }
        do throws(AppleAdapterError) {
            _ = try AppleAdapter.consumptionInformation(
                deliveryStatus: policy.deliveryStatus, sampleContentProvided: policy.sampleContentProvided,
                consumptionPercentage: policy.consumptionPercentage, refundPreference: policy.refundPreference,
                kind: .consumable)
        } catch {
            guard case .invalidRequest(let problem) = error else { throw PolicyError(problem: "is not valid") }
            throw PolicyError(problem: "is refused: " + problem)
        }
        if policy.answerAutomatically, !policy.customerConsented {
            throw PolicyError(
                problem: "answers automatically without customer_consented: consumption data is never sent "
                    + "without the customer's consent")
        }
        return policy
    }

    /// What is wrong with a policy file.
    public struct PolicyError: Error, Sendable {
        public let problem: String
    }
}
