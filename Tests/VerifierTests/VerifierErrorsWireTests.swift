import AppStore
import Foundation
import GooglePlay
import HTTPClient
import Model
import Testing
import Wire

@testable import VerifierService

/// The status and message a caller sees for each of the verifier's errors, as the RPC layer
/// answers a call that threw one, and the text logs and inbox entries show for it.
@Suite("Verifier errors on the wire")
struct VerifierErrorsWireTests {
    /// An error the table maps, and what the caller sees for it.
    struct Case: Sendable, CustomTestStringConvertible {
        let error: any RPCErrorConvertible & Sendable
        let expected: RPCError
        var testDescription: String { "\(expected.code.name): \(expected.message.prefix(60))" }
    }

    static let appleIncomplete: AppleLifecycle.Incomplete = {
        do throws(AppleLifecycle.Incomplete) {
            _ = try AppleLifecycle.subscription(
                transaction: AppleTransaction(), renewalInfo: nil, status: nil, now: Date())
        } catch {
            return error
        }
        fatalError("a transaction without ids was normalized")
    }()

    static let googleIncomplete: GooglePlayLifecycle.Incomplete = {
        do throws(GooglePlayLifecycle.Incomplete) {
            _ = try GooglePlayLifecycle.subscription(
                SubscriptionPurchaseV2(), token: "t", packageName: "p", storeTime: 0, now: Date())
        } catch {
            return error
        }
        fatalError("a subscription without line items was normalized")
    }()

    static let requestCases: [Case] = [
        Case(
            error: PurchaseRequestError.invalidRequest("account_id must be 1 to 256 bytes"),
            expected: RPCError(.invalidArgument, "account_id must be 1 to 256 bytes")),
        Case(
            error: PurchaseRequestError.transferRefused,
            expected: RPCError(
                .permissionDenied, "the purchase belongs to another account and the transfer policy refuses moving it")),
        Case(
            error: PurchaseRequestError.keptByFirstAccount,
            expected: RPCError(
                .permissionDenied, "the purchase stays with the account that claimed it first (transfer policy keep)")),
        Case(
            error: PurchaseRequestError.storeNotConfigured("Google Play"),
            expected: RPCError(.unimplemented, "this verifier is not configured for Google Play (see VERIFIER_STORES)")),
    ]

    static let appleCases: [Case] = {
        let notFound = AppStoreAPIError(.notFound, "unknown transaction", httpStatus: 404, apiErrorCode: 4_040_010)
        let wrongEnvironment = AppStoreAPIError(.wrongEnvironment, "not here", httpStatus: 404, apiErrorCode: 4_040_010)
        let refused = AppleVerificationError(.badChain, "the chain does not end at a trust anchor")
        let retryable = AppleVerificationError(.retryable, "the OCSP responder did not answer")
        return [
            Case(
                error: AppleAdapterError.invalidRequest("transaction_id must be 1 to 64 ASCII characters"),
                expected: RPCError(.invalidArgument, "transaction_id must be 1 to 64 ASCII characters")),
            Case(
                error: AppleAdapterError.environmentNotServed(.production),
                expected: RPCError(.failedPrecondition, "this verifier does not serve Apple Production")),
            Case(
                error: AppleAdapterError.otherAccountsToken,
                expected: RPCError(.permissionDenied, "the purchase was made with another account's appAccountToken")),
            Case(
                error: AppleAdapterError.presented(refused),
                expected: RPCError(
                    .invalidArgument,
                    "the signed transaction is refused: bad_chain: the chain does not end at a trust anchor")),
            Case(
                error: AppleAdapterError.presented(retryable),
                expected: RPCError(.unavailable, "retryable: the OCSP responder did not answer")),
            Case(
                error: AppleAdapterError.unrecordable(appleIncomplete),
                expected: RPCError(
                    .invalidArgument, "the transaction cannot be recorded: the transaction has no transactionId")),
            Case(
                error: AppleAdapterError.store(notFound),
                expected: RPCError(.notFound, "the App Store does not know this transaction (unknown transaction)")),
            Case(
                error: AppleAdapterError.store(wrongEnvironment),
                expected: RPCError(.failedPrecondition, "the transaction belongs to the other App Store environment")),
            Case(
                error: AppleAdapterError.transactionNotFound(id: "2000000123", environments: [.production, .sandbox]),
                expected: RPCError(
                    .notFound,
                    "no App Store transaction 2000000123 in Production or Sandbox; check the id (any transaction id of the subscription works)"
                )),
            Case(
                error: AppleAdapterError.transactionNotFound(id: "2000000123", environments: [.sandbox]),
                expected: RPCError(
                    .notFound,
                    "no App Store transaction 2000000123 in Sandbox; check the id (any transaction id of the subscription works)"
                )),
            Case(
                error: AppleAdapterError.store(AppStoreAPIError(.rateLimited, "slow down", httpStatus: 429)),
                expected: RPCError(.unavailable, "App Store Server API: rateLimited (HTTP 429): slow down")),
            Case(
                error: AppleAdapterError.store(AppStoreAPIError(.server, "down", httpStatus: 500)),
                expected: RPCError(.unavailable, "App Store Server API: server (HTTP 500): down")),
            Case(
                error: AppleAdapterError.store(AppStoreAPIError(.network, "connection refused")),
                expected: RPCError(.unavailable, "App Store Server API: network: connection refused")),
            Case(
                error: AppleAdapterError.store(AppStoreAPIError(.invalidRequest, "bad id", httpStatus: 400)),
                expected: RPCError(.invalidArgument, "App Store Server API: invalidRequest (HTTP 400): bad id")),
            Case(
                error: AppleAdapterError.store(AppStoreAPIError(.unauthorized, "key refused", httpStatus: 401)),
                expected: RPCError(.internal, "App Store Server API: unauthorized (HTTP 401): key refused")),
            Case(
                error: AppleAdapterError.store(AppStoreAPIError(.invalidResponse, "not JSON")),
                expected: RPCError(.internal, "App Store Server API: invalidResponse: not JSON")),
            Case(
                error: AppleAdapterError.store(refused),
                expected: RPCError(
                    .unavailable,
                    "the App Store answered with data that does not verify: bad_chain: the chain does not end at a trust anchor"
                )),
            Case(
                error: AppleAdapterError.store(CancellationError()),
                expected: RPCError(.internal, "CancellationError()")),
        ]
    }()

    static let googleCases: [Case] = {
        let key = SubscriptionKey(store: .google, environment: .production, storeID: String(repeating: "t", count: 60))
        let subscription = GoogleAdapterError.PresentedPurchase(
            packageName: "com.example.app", productID: "pro_monthly", oneTime: false)
        let oneTime = GoogleAdapterError.PresentedPurchase(
            packageName: "com.example.app", productID: "lifetime", oneTime: true)
        return [
            Case(
                error: GoogleAdapterError.invalidRequest("product_id must be 1 to 256 bytes"),
                expected: RPCError(.invalidArgument, "product_id must be 1 to 256 bytes")),
            Case(
                error: GoogleAdapterError.packageNotServed(String(repeating: "p", count: 120)),
                expected: RPCError(
                    .failedPrecondition,
                    "package \(String(repeating: "p", count: 100)) is not served by this verifier")),
            Case(
                error: GoogleAdapterError.otherAccount,
                expected: RPCError(
                    .permissionDenied, "the purchase was made for another account (obfuscatedExternalAccountId)")),
            Case(
                error: GoogleAdapterError.wrongProduct("pro_monthly"),
                expected: RPCError(.invalidArgument, "the purchase token is not for product pro_monthly")),
            Case(
                error: GoogleAdapterError.notInLedger(key),
                expected: RPCError(
                    .notFound,
                    "the ledger has no Google purchase \(String(repeating: "t", count: 40))…; verify it first")),
            Case(
                error: GoogleAdapterError.unrecordable(googleIncomplete),
                expected: RPCError(
                    .failedPrecondition, "Google's answer cannot be recorded: the subscription has no line items")),
            Case(
                error: GoogleAdapterError.store(GooglePlayAPIError(.notFound, "no such token", httpStatus: 404)),
                expected: RPCError(.notFound, "Google does not know this purchase token (no such token)")),
            Case(
                error: GoogleAdapterError.store(GooglePlayAPIError(.gone, "too old", httpStatus: 410)),
                expected: RPCError(.notFound, "Google does not know this purchase token (too old)")),
            Case(
                error: GoogleAdapterError.store(GooglePlayAPIError(.server, "backend error", httpStatus: 503)),
                expected: RPCError(.unavailable, "Google Play Developer API: server (HTTP 503): backend error")),
            Case(
                error: GoogleAdapterError.store(GooglePlayAPIError(.rateLimited, "quota", httpStatus: 429)),
                expected: RPCError(.unavailable, "Google Play Developer API: rateLimited (HTTP 429): quota")),
            Case(
                error: GoogleAdapterError.store(GooglePlayAPIError(.network, "timed out")),
                expected: RPCError(.unavailable, "Google Play Developer API: network: timed out")),
            Case(
                error: GoogleAdapterError.store(GooglePlayAPIError(.invalidRequest, "bad token", httpStatus: 400)),
                expected: RPCError(.invalidArgument, "Google Play Developer API: invalidRequest (HTTP 400): bad token")),
            Case(
                error: GoogleAdapterError.presentedPurchase(
                    GooglePlayAPIError(
                        .notFound, "purchases.subscriptionsv2.get com.example.app: not found", httpStatus: 404),
                    subscription),
                expected: RPCError(
                    .notFound,
                    "Google Play has no purchase of com.example.app with this purchase_token as a subscription "
                        + "(pro_monthly is not in GOOGLE_ONE_TIME_PRODUCTS) (HTTP 404: purchases.subscriptionsv2.get "
                        + "com.example.app: not found); check purchase_token (the app's Purchase.getPurchaseToken(), whole)"
                )),
            Case(
                error: GoogleAdapterError.presentedPurchase(
                    GooglePlayAPIError(.notFound, "purchases.products.get com.example.app: not found", httpStatus: 404),
                    oneTime),
                expected: RPCError(
                    .notFound,
                    "Google Play has no purchase of com.example.app with this purchase_token as one-time product lifetime "
                        + "(HTTP 404: purchases.products.get com.example.app: not found); check purchase_token (the app's "
                        + "Purchase.getPurchaseToken(), whole) and product_id"
                )),
            Case(
                error: GoogleAdapterError.presentedPurchase(
                    GooglePlayAPIError(
                        .gone, "purchases.subscriptionsv2.get com.example.app: expired", httpStatus: 410),
                    subscription),
                expected: RPCError(
                    .notFound,
                    "Google Play no longer keeps this purchase of com.example.app (HTTP 410: purchases.subscriptionsv2.get "
                        + "com.example.app: expired): it ended too long ago"
                )),
            Case(
                error: GoogleAdapterError.presentedPurchase(
                    GooglePlayAPIError(
                        .invalidRequest, "purchases.subscriptionsv2.get com.example.app: Invalid Value", httpStatus: 400
                    ),
                    subscription),
                expected: RPCError(
                    .invalidArgument,
                    "Google Play refuses this purchase_token for com.example.app (HTTP 400: purchases.subscriptionsv2.get "
                        + "com.example.app: Invalid Value); check purchase_token (the app's Purchase.getPurchaseToken(), whole)"
                )),
            Case(
                error: GoogleAdapterError.store(GooglePlayAPIError(.unauthorized, "refused", httpStatus: 403)),
                expected: RPCError(.internal, "Google Play Developer API: unauthorized (HTTP 403): refused")),
        ]
    }()

    @Test(
        "each error answers its status and message, and describes itself as its caller sees it",
        arguments: requestCases + appleCases + googleCases)
    func mapping(_ test: Case) {
        #expect(test.error.rpcError == test.expected)
        #expect("\(test.error)" == test.expected.description)
    }

    @Test("store failures are classified by what they mean for the purchase")
    func classification() {
        let retryable = AppleVerificationError(.retryable, "no answer")
        guard case .checkIncomplete = AppleAdapterError.presented(retryable) else {
            Issue.record("a check that could not be completed is not a refusal")
            return
        }
        guard case .storeOtherEnvironment = AppleAdapterError.store(AppStoreAPIError(.wrongEnvironment, "x")) else {
            Issue.record("error 4040010 is the other environment")
            return
        }
        guard case .storeNotFound = GoogleAdapterError.store(GooglePlayAPIError(.gone, "x", httpStatus: 410)) else {
            Issue.record("Play's 410 is a token Google no longer knows")
            return
        }
    }
}
