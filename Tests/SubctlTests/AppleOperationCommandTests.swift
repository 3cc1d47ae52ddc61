import Model
import Sockets
import SubctlKit
import Synchronization
import Testing
import Wire

/// Answers the App Store operations from memory and keeps each request's method and bytes.
final class AppleOperationTransport: BytesTransport {
    let answers: [String: [UInt8]]
    let requests = Mutex<[(String, [UInt8])]>([])

    init(_ answers: [String: [UInt8]]) { self.answers = answers }

    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        requests.withLock { $0.append((method, request)) }
        guard let answer = answers[method] else { throw SubctlError(.rpc(.unimplemented), method) }
        return answer
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        ([], SubctlError(.rpc(.unimplemented), method))
    }
}

@Suite("subctl apple extend, set-token and refunds")
struct AppleOperationCommandTests {
    static let verifier = "subscriptions.verifier.v1.Verifier/"
    static let options = CallOptions(address: HostPort(parsing: "127.0.0.1:8000")!, timeout: .seconds(5))

    @Test("each verb parses into its verifier request, --env and --reason-code included")
    func parses() throws {
        #expect(
            try SubctlCommand.parse([
                "apple", "extend", "2000000001", "--days", "7", "--reason-code", "3", "--request-id",
                "6f1c1a52-3c1e-4b7a-9d0e-2f7a4c9b8e11", "--reason", "outage", "--env", "sandbox", "--addr",
                "127.0.0.1:8000",
            ])
                == .appleOperation(
                    .extend(
                        ExtendAppleRenewalDateRequest(
                            originalTransactionID: "2000000001", environment: .sandbox, days: 7, reasonCode: 3,
                            requestID: "6f1c1a52-3c1e-4b7a-9d0e-2f7a4c9b8e11", reason: "outage")),
                    options: Self.options))
        #expect(
            try SubctlCommand.parse([
                "apple", "set-token", "2000000001", "--account", "user-5", "--reason", "support", "--addr",
                "127.0.0.1:8000",
            ])
                == .appleOperation(
                    .setToken(
                        SetAppleAppAccountTokenRequest(
                            originalTransactionID: "2000000001", accountID: "user-5", reason: "support")),
                    options: Self.options))
        #expect(
            try SubctlCommand.parse([
                "apple", "refunds", "2000000009", "--reason", "ticket", "--addr", "127.0.0.1:8000",
            ])
                == .appleOperation(
                    .refunds(GetAppleRefundHistoryRequest(transactionID: "2000000009", reason: "ticket")),
                    options: Self.options))
    }

    @Test(
        "a malformed operation is a usage error naming what to give",
        arguments: [
            (
                ["apple", "extend", "1", "--reason", "r", "--addr", "h:1"],
                "USAGE: apple extend needs --days N (1...90)"
            ),
            (
                ["apple", "extend", "1", "--days", "91", "--reason", "r", "--addr", "h:1"],
                "USAGE: apple extend needs --days N (1...90)"
            ),
            (
                ["apple", "extend", "1", "--days", "1", "--addr", "h:1"],
                "USAGE: apple extend needs --reason TEXT (kept in the audit trail)"
            ),
            (
                ["apple", "set-token", "1", "--reason", "r", "--addr", "h:1"],
                "USAGE: apple set-token needs --account ACCOUNT_ID"
            ),
            (
                ["apple", "refunds", "1", "--reason", "r", "--env", "xcode", "--addr", "h:1"],
                #"USAGE: --env expects production or sandbox, got "xcode""#
            ),
            (["apple", "refunds", "--reason", "r", "--addr", "h:1"], "USAGE: apple refunds needs a TRANSACTION_ID"),
        ])
    func refusesMalformed(arguments: [String], expected: String) {
        do {
            _ = try SubctlCommand.parse(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test("extend without --request-id sends a new UUID and prints it with the new renewal date")
    func extendPrintsTheRequestID() async throws {
        let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "2000000001")
        let answer = ExtendAppleRenewalDateResponse(
            subscription: Subscription(
                key: key, productID: "pro.monthly", state: .active, expiresTimeMilliseconds: 1_767_225_600_000,
                autoRenew: true),
            effectiveTimeMilliseconds: 1_767_225_600_000, webOrderLineItemID: "8000000001")
        let transport = AppleOperationTransport([Self.verifier + "ExtendAppleRenewalDate": answer.serialized()])
        let lines = Mutex<[String]>([])
        let runner = CommandRunner(write: { line in lines.withLock { $0.append(line) } })
        try await runner.run(
            .appleOperation(
                .extend(ExtendAppleRenewalDateRequest(originalTransactionID: "2000000001", days: 7, reason: "outage")),
                options: Self.options), transport: transport, standardInput: { "" })
        let first = transport.requests.withLock { $0.first }
        let sent = try ExtendAppleRenewalDateRequest(serialized: try #require(first).1)
        #expect(sent.requestID.count == 36)
        #expect(
            lines.withLock { $0 } == [
                "extended 2000000001 by 7 days: renews 2026-01-01T00:00:00Z request-id \(sent.requestID)",
                "subscription apple/sandbox/2000000001 product pro.monthly state active expires 2026-01-01T00:00:00Z"
                    + " auto-renew yes account -",
            ])
    }

    @Test("refunds prints a line per refund, or that there are none")
    func refundsLines() async throws {
        let answer = GetAppleRefundHistoryResponse(refunds: [
            AppleRefund(
                transactionID: "2000000009", originalTransactionID: "2000000001", productID: "pro.monthly",
                purchaseTimeMilliseconds: 1_767_225_600_000, revocationTimeMilliseconds: 1_767_312_000_000,
                revocationReason: 1, knownBefore: false)
        ])
        for (response, expected) in [
            (
                answer,
                [
                    "refund 2000000009 original 2000000001 product pro.monthly purchased 2026-01-01T00:00:00Z"
                        + " refunded 2026-01-02T00:00:00Z reason 1 recorded-before no"
                ]
            ), (GetAppleRefundHistoryResponse(), ["no refunds"]),
        ] {
            let transport = AppleOperationTransport([Self.verifier + "GetAppleRefundHistory": response.serialized()])
            let lines = Mutex<[String]>([])
            let runner = CommandRunner(write: { line in lines.withLock { $0.append(line) } })
            try await runner.run(
                .appleOperation(
                    .refunds(GetAppleRefundHistoryRequest(transactionID: "2000000009", reason: "ticket")),
                    options: Self.options), transport: transport, standardInput: { "" })
            #expect(lines.withLock { $0 } == expected)
        }
    }
}
