import AppStore
import Clients
import Foundation
import HTTPClient
import Model
import RPC
import Testing
import Wire

@testable import VerifierService

@Suite("App Store support operations", .serialized)
struct AppleStoreOperationsTests {
    static let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")
    static let requestID = "6f1c1a52-3c1e-4b7a-9d0e-2f7a4c9b8e11"

    /// The harness with one active monthly subscription (original 2000000001, newest
    /// transaction 2000000009, 30 days left).
    static func harness() async throws -> AppleAdapterHarness {
        let harness = try await AppleAdapterHarness()
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
        return harness
    }

    @Test("an extension moves the recorded end by the days asked, with an audit event naming the caller and reason")
    func extendRecordsTheNewEnd() async throws {
        let harness = try await Self.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        let before = harness.clock.milliseconds + 30 * 86_400_000
        let response = try await verifier.extendAppleRenewalDate(
            ExtendAppleRenewalDateRequest(
                originalTransactionID: "2000000009", days: 7, reasonCode: 3, requestID: Self.requestID,
                reason: "outage on the 3rd"))
        #expect(response.effectiveTimeMilliseconds == before + 7 * 86_400_000)
        #expect(response.subscription?.expiresTimeMilliseconds == before + 7 * 86_400_000)
        #expect(harness.api.calls.contains("extendRenewalDate 2000000001 7"))
        let action = try #require(try await harness.history(Self.key).first { $0.kind == .storeAction })
        #expect(action.storeSubtype == "EXTEND_RENEWAL_DATE")
        #expect(action.reason == "outage on the 3rd")
        #expect(action.actor?.hasPrefix("address ") == true)
        #expect(action.detail?.contains("effectiveDate \(EpochTime.iso8601(before + 7 * 86_400_000))") == true)
        await harness.stop()
    }

    @Test(
        "an extension's request is checked before the App Store is asked",
        arguments: [
            (
                ExtendAppleRenewalDateRequest(
                    originalTransactionID: "2000000001", days: 91, requestID: requestID, reason: "r"),
                "days must be 1 to 90 (Apple's extendByDays), got 91"
            ),
            (
                ExtendAppleRenewalDateRequest(
                    originalTransactionID: "2000000001", days: 1, reasonCode: 4, requestID: requestID, reason: "r"),
                "reason_code must be 0 to 3 (Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, "
                    + "2 other, 3 service issue or outage), got 4"
            ),
            (
                ExtendAppleRenewalDateRequest(originalTransactionID: "2000000001", days: 1, requestID: requestID),
                "reason must be 1 to 512 bytes (why the caller acts, for the audit trail)"
            ),
        ])
    func extendRefusesBadRequests(request: ExtendAppleRenewalDateRequest, message: String) async throws {
        let harness = try await Self.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        await #expect(throws: RPCError(.invalidArgument, message)) {
            _ = try await verifier.extendAppleRenewalDate(request)
        }
        #expect(harness.api.calls.isEmpty)
        await harness.stop()
    }

    @Test(
        "the App Store's refusals of an extension are the documented RPC errors and record nothing",
        arguments: [
            (
                AppStoreAPIError(
                    .invalidRequest, "PUT /inApps/v1/subscriptions/extend/2000000001 in Sandbox", httpStatus: 403,
                    apiErrorCode: 4_030_005),
                StatusCode.failedPrecondition,
                "Apple extends a subscription at most twice in 365 days"
            ),
            (
                AppStoreAPIError(.invalidRequest, "ineligible", httpStatus: 403, apiErrorCode: 4_030_004),
                .failedPrecondition, "Apple extends only an active, paid subscription"
            ),
            (
                AppStoreAPIError(.notFound, "unknown", httpStatus: 404, apiErrorCode: 4_040_005),
                .notFound, "check the transaction id"
            ),
            (
                AppStoreAPIError(
                    .rateLimited, "slow down", httpStatus: 429, apiErrorCode: 4_290_000, retryAfter: .seconds(30)),
                .resourceExhausted, "try again after 30 s (Retry-After)"
            ),
        ])
    func extendRefusals(refusal: AppStoreAPIError, code: StatusCode, says: String) async throws {
        let harness = try await Self.harness()
        harness.api.refuseActions(refusal)
        let verifier = try verifierClient(apple: harness.adapter)
        do {
            _ = try await verifier.extendAppleRenewalDate(
                ExtendAppleRenewalDateRequest(
                    originalTransactionID: "2000000001", days: 3, requestID: Self.requestID, reason: "support"))
            Issue.record("the extension succeeded")
        } catch {
            #expect(error.code == code)
            #expect(error.message.contains(says), "\(error.message)")
            #expect(error.message.contains("error \(refusal.apiErrorCode ?? 0)"), "\(error.message)")
        }
        #expect(try await harness.ledger.subscription(Self.key) == nil)
        await harness.stop()
    }

    @Test("setting the app account token sets the account's token at Apple, records it and links the account")
    func setTokenLinks() async throws {
        let harness = try await Self.harness()
        let verifier = try verifierClient(apple: harness.adapter)
        let token = AccountToken.expected(for: "user-5", namespace: AppleSettings.defaultTokenNamespace)
        let response = try await verifier.setAppleAppAccountToken(
            SetAppleAppAccountTokenRequest(
                originalTransactionID: "2000000001", accountID: "user-5", reason: "bought before sign-in"))
        #expect(response.appAccountToken == token)
        #expect(response.subscription?.accountID == "user-5")
        #expect(response.subscription?.storeAccountRef == token)
        #expect(harness.api.calls.contains("setAppAccountToken 2000000001"))
        let action = try #require(try await harness.history(Self.key).first { $0.kind == .storeAction })
        #expect(action.storeSubtype == "SET_APP_ACCOUNT_TOKEN")
        #expect(action.reason == "bought before sign-in")
        await harness.stop()
    }

    @Test("refund history answers each refund, whether the ledger knew it, and records the ones it did not")
    func refundHistoryRecordsUnknownRefunds() async throws {
        let harness = try await AppleAdapterHarness()
        let revoked = harness.clock.milliseconds - 3_600_000
        harness.api.set(
            "2000000001",
            .init(transaction: harness.transaction(revokedAt: revoked), renewal: harness.renewal(), status: 5))
        let verifier = try verifierClient(apple: harness.adapter)
        let request = GetAppleRefundHistoryRequest(transactionID: "2000000009", reason: "customer asks")
        let first = try await verifier.getAppleRefundHistory(request)
        #expect(
            first.refunds == [
                AppleRefund(
                    transactionID: "2000000009", originalTransactionID: "2000000001", productID: "com.example.monthly",
                    purchaseTimeMilliseconds: harness.clock.milliseconds - 86_400_000,
                    revocationTimeMilliseconds: revoked, revocationReason: 0, knownBefore: false)
            ])
        #expect(try await harness.ledger.subscription(Self.key)?.revokedTimeMilliseconds == revoked)
        let second = try await verifier.getAppleRefundHistory(request)
        #expect(second.refunds.map(\.knownBefore) == [true])
        let reads = try await harness.history(Self.key).filter { $0.storeSubtype == "REFUND_HISTORY" }
        #expect(reads.count == 2)
        #expect(reads.allSatisfy { $0.kind == .storeAction && $0.reason == "customer asks" })
        await harness.stop()
    }
}
