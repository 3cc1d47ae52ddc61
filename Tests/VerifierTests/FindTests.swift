import AppStore
import Clients
import Foundation
import Model
import Observability
import RPC
import Testing
import Wire

@testable import VerifierService

/// `Find` over a ledger in this process: every id of an App Store purchase the verifier
/// recorded, the account, an App Store order id read with Look Up Order ID (recorded or not),
/// and the NOT_FOUND that names what was tried.
@Suite("Find", .serialized)
struct FindTests {
    static let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")

    /// The harness with one purchase (original 2000000001, transaction 2000000009) verified for
    /// user-42.
    static func harness() async throws -> AppleAdapterHarness {
        let harness = try await AppleAdapterHarness()
        let token = AccountToken.expected(for: "user-42", namespace: AppleSettings.defaultTokenNamespace)
        harness.api.set(
            "2000000001", .init(transaction: harness.transaction(token: token), renewal: harness.renewal(), status: 1))
        _ = try await harness.adapter.verifyPurchase(
            VerifyApplePurchaseRequest(
                accountID: "user-42", signedTransaction: try harness.chain.sign(harness.transaction(token: token)),
                idempotencyKey: "v-1"))
        return harness
    }

    static func client(_ harness: AppleAdapterHarness, orders: [String: [String]] = [:]) throws -> VerifierClient {
        let router = RPCRouter()
        let finder = SubscriberFinder(ledger: harness.ledger) { orders[$0] ?? [] }
        router.unary(VerifierRPC.find) { (_, request: FindRequest) in try await finder.find(request.value) }
        return VerifierClient(InProcessTransport(server: try RPCServer(configuration: .init(), router: router)))
    }

    @Test(
        "each id of a recorded purchase finds it with its account, periods and latest events",
        arguments: [
            ("2000000001", FindMatch.appleOriginalTransactionID), ("2000000009", .appleTransactionID),
            ("user-42", .accountID),
        ])
    func findsRecordedPurchase(value: String, taken: FindMatch) async throws {
        let harness = try await Self.harness()
        let found = try await Self.client(harness).find(FindRequest(value: value, reason: "ticket 12"))
        #expect(found.takenAs == taken)
        #expect(found.accountIDs == ["user-42"])
        #expect(found.subscriptions.map(\.subscription?.key) == [Self.key])
        #expect(found.subscriptions.first?.subscription?.periods.isEmpty == false)
        #expect(!found.events.isEmpty && found.events.count <= 20)
        #expect(found.unrecordedOriginalTransactionIDs.isEmpty)
        await harness.stop()
    }

    @Test("an App Store order id finds the purchases it names, and names those the ledger has not recorded")
    func findsByOrderID() async throws {
        let harness = try await Self.harness()
        let client = try Self.client(harness, orders: ["MK5TTTVWJH": ["2000000001", "2000000077"]])
        let found = try await client.find(FindRequest(value: "MK5TTTVWJH"))
        #expect(found.takenAs == .appleOrderID)
        #expect(found.subscriptions.map(\.matched) == [.appleOrderID])
        #expect(found.subscriptions.map(\.subscription?.key) == [Self.key])
        #expect(found.unrecordedOriginalTransactionIDs == ["2000000077"])
        // Read out in lower case, it is found as the order id it is.
        let lower = try await client.find(FindRequest(value: "mk5tttvwjh"))
        #expect(lower.takenAs == .appleOrderID)
        #expect(lower.subscriptions.map(\.subscription?.key) == [Self.key])
        // A lower-case value that finds nothing either way is NOT_FOUND naming the value as given.
        let error = await #expect(throws: RPCError.self) {
            _ = try await client.find(FindRequest(value: "mk5unknown1"))
        }
        #expect(error?.message.hasPrefix("nothing in the ledger matches \"mk5unknown1\" as") == true)
        await harness.stop()
    }

    @Test("the adapter reads an order's purchases with Look Up Order ID, each signed transaction verified")
    func adapterLooksUpOrders() async throws {
        let harness = try await Self.harness()
        harness.api.setOrder("MK5TTTVWJH", ["2000000001"])
        #expect(try await harness.adapter.lookUpOrder("MK5TTTVWJH") == ["2000000001"])
        #expect(try await harness.adapter.lookUpOrder("MK5NOTMINE").isEmpty)
        #expect(harness.api.calls.suffix(2) == ["lookUpOrderID MK5TTTVWJH", "lookUpOrderID MK5NOTMINE"])
        await harness.stop()
    }

    @Test("a value nothing matches is NOT_FOUND naming what was tried")
    func unknownValue() async throws {
        let harness = try await Self.harness()
        let error = await #expect(throws: RPCError.self) {
            _ = try await Self.client(harness).find(FindRequest(value: "MK5UNKNOWN1"))
        }
        #expect(error?.code == .notFound)
        #expect(
            error?.message
                == "nothing in the ledger matches \"MK5UNKNOWN1\" as an account id, an App Store transaction or "
                + "original transaction id, a Google Play purchase token or order id, an App Store order id "
                + "(Look Up Order ID); check the value the customer quoted")
        // A purchase token is not repeated whole.
        let token = String(repeating: "abcdefghij", count: 10)
        let long = await #expect(throws: RPCError.self) {
            _ = try await Self.client(harness).find(FindRequest(value: token))
        }
        #expect(long?.message.hasPrefix("nothing in the ledger matches \"abcdefghijab… (100 bytes)\" as") == true)
        await harness.stop()
    }

    @Test("Find is the verifier's one method besides Health that a read-only caller may call, its answer redacted")
    func readOnlyMethods() async throws {
        let harness = try await Self.harness()
        let router = RPCRouter()
        VerifierMethods.register(on: router, apple: nil, google: nil)
        VerifierMethods.registerFind(
            on: router, ledger: harness.ledger, apple: nil,
            logger: Logger(service: "verifier-test", minimumLevel: .error, sink: .capturing()))
        // Health is the host's (ServiceHost registers it, by role).
        let expected = Set(VerifierRPC.readMethods.map(\.name)).subtracting([VerifierRPC.health.name])
        #expect(Set(router.readOnlyMethodNames) == expected)
    }

    @Test("an empty value and an overlong reason are INVALID_ARGUMENT")
    func checksRequest() async throws {
        let harness = try await Self.harness()
        let router = RPCRouter()
        VerifierMethods.registerFind(
            on: router, ledger: harness.ledger, apple: nil,
            logger: Logger(service: "verifier-test", minimumLevel: .error, sink: .capturing()))
        let client = VerifierClient(InProcessTransport(server: try RPCServer(configuration: .init(), router: router)))
        for request in [
            FindRequest(value: ""), FindRequest(value: "user-42", reason: String(repeating: "r", count: 513)),
        ] {
            let error = await #expect(throws: RPCError.self) { _ = try await client.find(request) }
            #expect(error?.code == .invalidArgument)
        }
        await harness.stop()
    }
}
