import AppStore
import GooglePlay
import HTTPClient
import Testing
import Wire

@testable import VerifierService

@Suite("Notification metrics")
struct NotificationMetricsTests {
    @Test(
        "a processing failure counts under the store API, the ledger, an unrecordable answer or other",
        arguments: [
            (AppStoreAPIError(.network, "down") as any Error, "store_api"),
            (GooglePlayAPIError(.server, "busy"), "store_api"),
            (AppleAdapterError.storeUnavailable(AppStoreAPIError(.network, "down")), "store_api"),
            (GoogleAdapterError.storeFailed(GooglePlayAPIError(.gone, "old")), "store_api"),
            (RPCError(.unavailable, "ledger down"), "ledger"),
            (GoogleAdapterError.invalidRequest("no"), "other"),
            (CancellationError(), "other"),
        ])
    func processingReasons(_ error: any Error, _ reason: String) {
        #expect(NotificationMetrics.reason(error).rawValue == reason)
    }

    @Test("an App Store signed-data refusal counts under the contract's reasons")
    func validationReasons() {
        let table: [(AppleVerificationError.Code, String)] = [
            (.malformed, "malformed"), (.unsupportedAlgorithm, "signature"), (.badSignature, "signature"),
            (.badChain, "certificate_chain"), (.badCertificate, "certificate_chain"), (.wrongApp, "bundle_or_package"),
            (.wrongEnvironment, "environment"),
        ]
        for (code, reason) in table {
            #expect(NotificationMetrics.reason(code).rawValue == reason, "\(code)")
        }
    }
}
