import AppStore
import Clients
import Connect
import Foundation
import HTTP
import Model
import Observability
import RPC
import TestSupport
import Testing
import Wire

@testable import VerifierService

@Suite("Apple purchase verification", .serialized)
struct ApplePurchaseTests {
    static let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")
    static let namespace = AppleSettings.defaultTokenNamespace

    /// The answer for a transaction id the App Store knows in neither environment.
    static func unknown(_ id: String) -> RPCError {
        RPCError(
            .notFound,
            "no App Store transaction \(id) in Sandbox or Production; check the id (any transaction id of the subscription works)"
        )
    }

    @Test("a signed transaction with the account's token is verified, recorded from the API and linked")
    func verifiesAndLinks() async throws {
        let harness = try await AppleAdapterHarness()
        let token = AccountToken.expected(for: "user-42", namespace: Self.namespace)
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(token: token), renewal: harness.renewal(), status: 1))
        let signed = try harness.chain.sign(harness.transaction(token: token))
        let response = try await harness.adapter.verifyPurchase(
            VerifyApplePurchaseRequest(accountID: "user-42", signedTransaction: signed, idempotencyKey: "v-1"))
        #expect(response.newlyLinked)
        #expect(response.subscription?.accountID == "user-42")
        #expect(response.subscription?.state == .active)
        #expect(response.subscription?.storeAccountRef == token)
        // The same call again: already linked, same subscription.
        let again = try await harness.adapter.verifyPurchase(
            VerifyApplePurchaseRequest(accountID: "user-42", signedTransaction: signed, idempotencyKey: "v-1"))
        #expect(again.subscription?.accountID == "user-42")
        let account = try await harness.ledger.account("user-42")
        #expect(account.subscriptions.map(\.key) == [Self.key])
        await harness.stop()
    }

    @Test("another account's appAccountToken is PERMISSION_DENIED and links nothing")
    func otherAccountsToken() async throws {
        let harness = try await AppleAdapterHarness()
        let token = AccountToken.expected(for: "user-1", namespace: Self.namespace)
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(token: token), renewal: harness.renewal(), status: 1))
        let signed = try harness.chain.sign(harness.transaction(token: token))
        let verifier = try verifierClient(apple: harness.adapter)
        await #expect(
            throws: RPCError(.permissionDenied, "the purchase was made with another account's appAccountToken")
        ) {
            _ = try await verifier.verifyApplePurchase(
                VerifyApplePurchaseRequest(accountID: "user-2", signedTransaction: signed, idempotencyKey: "v-2"))
        }
        #expect(try await harness.ledger.subscription(Self.key) == nil)
        await harness.stop()
    }

    @Test("a transaction id is looked up with the API; unknown ids are NOT_FOUND; bad requests say what is wrong")
    func byTransactionID() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(autoRenew: 0), status: 1))
        let response = try await harness.adapter.verifyPurchase(
            VerifyApplePurchaseRequest(accountID: "user-7", transactionID: "2000000009", idempotencyKey: "v-3"))
        #expect(response.subscription?.state == .cancelled && response.subscription?.accountID == "user-7")
        let verifier = try verifierClient(apple: harness.adapter)
        await #expect(throws: Self.unknown("999")) {
            _ = try await verifier.verifyApplePurchase(
                VerifyApplePurchaseRequest(accountID: "user-7", transactionID: "999", idempotencyKey: "v-4"))
        }
        await #expect(throws: RPCError(.invalidArgument, "set exactly one of signed_transaction and transaction_id")) {
            _ = try await verifier.verifyApplePurchase(
                VerifyApplePurchaseRequest(accountID: "user-7", idempotencyKey: "v-5"))
        }
        await #expect(throws: RPCError(.invalidArgument, "account_id must be 1 to 256 bytes")) {
            _ = try await verifier.verifyApplePurchase(
                VerifyApplePurchaseRequest(transactionID: "2000000009", idempotencyKey: "v-6"))
        }
        let forged = try AppleSigningChain.generate().sign(harness.transaction())
        do {
            _ = try await verifier.verifyApplePurchase(
                VerifyApplePurchaseRequest(accountID: "user-7", signedTransaction: forged, idempotencyKey: "v-7"))
            Issue.record("a transaction from a foreign chain was accepted")
        } catch {
            #expect(
                error.code == .invalidArgument
                    && error.message.hasPrefix("the signed transaction is refused: bad_chain: "))
        }
        await harness.stop()
    }

    @Test(
        "a transaction id in neither environment is NOT_FOUND naming the id and both environments, not the other environment's"
    )
    func mistypedTransactionID() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.setFallsBack(false)
        let verifier = try verifierClient(apple: harness.adapter)
        await #expect(throws: Self.unknown("2000000123")) {
            _ = try await verifier.verifyApplePurchase(
                VerifyApplePurchaseRequest(accountID: "user-7", transactionID: "2000000123", idempotencyKey: "m-1"))
        }
        // Asked where it was presented, then in the other environment only to tell the answers apart.
        #expect(harness.api.calls == ["transactionInfo 2000000123", "transactionInfo 2000000123"])
        await harness.stop()
    }

    @Test("over HTTP (Connect, JSON) a transaction id in neither environment is a 404 not_found naming it")
    func mistypedTransactionIDOverHTTP() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.setFallsBack(false)
        let router = RPCRouter()
        VerifierMethods.register(on: router, apple: harness.adapter, google: nil)
        let server = try RPCServer(configuration: RPCServerConfiguration(), router: router)
        try server.start()
        let http = HTTPServer(
            host: "127.0.0.1", port: 0,
            logger: Logger(service: "verifier-test", minimumLevel: .error, sink: .capturing()))
        ConnectGateway(server: server).install(on: http)
        try http.start()
        let answer = try await connectCall(
            port: http.port, method: VerifierRPC.verifyApplePurchase.name,
            body: Array(#"{"accountId": "user-7", "transactionId": "2000000123", "idempotencyKey": "m-3"}"#.utf8))
        #expect(answer.status == 404)
        #expect(answer.text == #"{"code":"not_found","message":"\#(Self.unknown("2000000123").message)"}"#)
        http.stop()
        await server.shutdown()
        await harness.stop()
    }

    @Test("a transaction id found only in the environment this verifier does not take it from is that environment's")
    func transactionInOtherEnvironment() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.setFallsBack(false)
        var production = harness.transaction(original: "2000000501", id: "2000000502")
        production["environment"] = "Production"
        harness.api.set("2000000501", .init(transaction: production, renewal: nil, status: 1))
        let verifier = try verifierClient(apple: harness.adapter)
        await #expect(
            throws: RPCError(.failedPrecondition, "the transaction belongs to the other App Store environment")
        ) {
            _ = try await verifier.verifyApplePurchase(
                VerifyApplePurchaseRequest(accountID: "user-7", transactionID: "2000000502", idempotencyKey: "m-2"))
        }
        await harness.stop()
    }

    @Test("restore walks the transaction history and links every purchase of the account")
    func restore() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.set("2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
        var lifetime = harness.transaction(original: "3000000001", id: "3000000001", product: "com.example.lifetime")
        lifetime["type"] = "Non-Consumable"
        lifetime["expiresDate"] = nil
        harness.api.set("3000000001", .init(transaction: lifetime, renewal: nil, status: nil))
        let response = try await harness.adapter.restorePurchases(
            RestorePurchasesRequest(accountID: "user-9", appleTransactionIDs: ["2000000009"], idempotencyKey: "r-1"))
        #expect(Set(response.subscriptions.map(\.key.storeID)) == ["2000000001", "3000000001"])
        #expect(response.subscriptions.allSatisfy { $0.accountID == "user-9" && $0.state == .active })
        await harness.stop()
    }

    @Test(
        "an import's restore records an imported event with the caller and reason, and once held asks the store no more"
    )
    func importRestore() async throws {
        let harness = try await AppleAdapterHarness()
        harness.api.set("2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
        let verifier = try verifierClient(apple: harness.adapter)
        let request = RestorePurchasesRequest(
            accountID: "user-9", appleTransactionIDs: ["2000000001"], idempotencyKey: "import-1",
            reason: "migration (subs.csv row 1)")
        let first = try await verifier.restorePurchases(request)
        // The harness's App Store is the sandbox.
        let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")
        #expect(first.restored == [RestoredPurchase(key: key, link: .linked)])
        let imported = try #require(try await harness.history(key).first { $0.kind == .imported })
        #expect(imported.reason == "migration (subs.csv row 1)")
        #expect(imported.actor?.isEmpty == false)
        #expect(imported.storeSubtype == nil)
        let calls = harness.api.calls.count
        let again = try await verifier.restorePurchases(request)
        #expect(again.restored == [RestoredPurchase(key: key, link: .alreadyRecorded)])
        #expect(again.subscriptions.map(\.key) == [key])
        #expect(harness.api.calls.count == calls)
        // Without a reason a restore asks the store as before, and records no imported event.
        let restore = try await verifier.restorePurchases(
            RestorePurchasesRequest(accountID: "user-9", appleTransactionIDs: ["2000000001"], idempotencyKey: "r-2"))
        #expect(restore.restored == [RestoredPurchase(key: key, link: .alreadyLinked)])
        #expect(harness.api.calls.count > calls)
        #expect(try await harness.history(key).filter { $0.kind == .imported }.count == 1)
        await harness.stop()
    }

    @Test("account tokens: a UUID account is its own token; other ids map to a stable name-based UUID")
    func accountTokens() {
        let uuid = "7A1C2F0E-3B7D-4D7C-9A57-1B2C3D4E5F60"
        #expect(AccountToken.expected(for: uuid, namespace: Self.namespace) == uuid.lowercased())
        let token = AccountToken.expected(for: "user-42", namespace: Self.namespace)
        #expect(token == AccountToken.expected(for: "user-42", namespace: Self.namespace))
        #expect(token != AccountToken.expected(for: "user-43", namespace: Self.namespace))
        #expect(Array(token)[14] == "5")
        #expect(AccountToken.matches(token.uppercased(), accountID: "user-42", namespace: Self.namespace))
        #expect(!AccountToken.matches("not-a-uuid", accountID: "user-42", namespace: Self.namespace))
    }
}
