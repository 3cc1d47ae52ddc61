import Foundation
import Model
import RPC
import Testing
import Wire

/// The App Store support operations through the whole system and the store simulator: each
/// succeeds and leaves its audit event (caller and reason) in the ledger, and each refusal of
/// the App Store comes back as its documented RPC error and changes nothing.
@Suite("End to end: App Store support operations")
struct AppleStoreOperationsScenarioTests {
    static func extend(_ stack: StoreSimStack, _ original: String, days: Int32, requestID: String) async throws
        -> ExtendAppleRenewalDateResponse
    {
        try await stack.verifierClient.call(
            VerifierRPC.extendAppleRenewalDate.name,
            ExtendAppleRenewalDateRequest(
                originalTransactionID: original, environment: .sandbox, days: days, reasonCode: 3,
                requestID: requestID, reason: "outage on the 3rd"))
    }

    @Test(
        "an extension moves access to the new end once per request id, is audited, and a third in a year is refused"
    )
    func extendRenewalDate() async throws {
        try await StoreSimStack.with { stack in
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            let until = try #require(
                try await stack.eventually(account, "the purchase") { $0.allowed }.untilMilliseconds)
            // Support acts with the clock where the purchase left it (as in the sandbox): the
            // extension is signed after the purchase all the same.
            let requestID = UUID().uuidString.lowercased()
            let extended = try await Self.extend(stack, original, days: 10, requestID: requestID)
            #expect(extended.effectiveTimeMilliseconds == until + 10 * 86_400_000)
            #expect(extended.subscription?.expiresTimeMilliseconds == until + 10 * 86_400_000)
            _ = try await stack.eventually(account, "the extended end") {
                $0.untilMilliseconds == until + 10 * 86_400_000
            }
            // The same request id again: Apple's first answer, no second extension.
            let again = try await Self.extend(stack, original, days: 10, requestID: requestID)
            #expect(again.effectiveTimeMilliseconds == extended.effectiveTimeMilliseconds)
            let events = try await stack.history(of: account)
            let actions = events.filter { $0.kind == .storeAction }
            #expect(actions.count == 1 || actions.count == 2)
            #expect(actions.allSatisfy { $0.storeSubtype == "EXTEND_RENEWAL_DATE" && $0.reason == "outage on the 3rd" })
            #expect(actions.allSatisfy { !($0.actor ?? "").isEmpty })
            // Apple's RENEWAL_EXTENDED reaches the verifier with the simulator's next delivery.
            try await stack.control("clock/advance", ["by": "+1m"])
            _ = try await stack.eventuallyInHistory(of: account, "RENEWAL_EXTENDED") { $0.contains("RENEWAL_EXTENDED") }

            try await stack.control("clock/advance", ["by": "+1h"])
            _ = try await Self.extend(stack, original, days: 1, requestID: UUID().uuidString.lowercased())
            let third = UUID().uuidString.lowercased()
            do {
                _ = try await Self.extend(stack, original, days: 1, requestID: third)
                Issue.record("a third extension within 365 days was taken")
            } catch let error as RPCError {
                #expect(error.code == .failedPrecondition)
                #expect(error.message.contains("error 4030005"), "\(error.message)")
            }
            let after = try #require(
                try await stack.eventually(account, "the second extension") {
                    $0.untilMilliseconds == until + 11 * 86_400_000
                }.untilMilliseconds)
            #expect(after == until + 11 * 86_400_000)
        }
    }

    @Test("an unknown id is NOT_FOUND and an expired subscription is not eligible; neither changes anything")
    func extendRefusals() async throws {
        try await StoreSimStack.with { stack in
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            do {
                _ = try await Self.extend(stack, "9999999999", days: 3, requestID: UUID().uuidString.lowercased())
                Issue.record("an unknown id was extended")
            } catch let error as RPCError {
                #expect(error.code == .notFound)
            }
            try await stack.control("apple/cancel", ["transactionId": original])
            try await stack.control("clock/advance", ["by": "+32d"])
            _ = try await stack.eventually(account, "the expiry") { !$0.allowed && $0.grant?.state == .expired }
            let before = try await stack.history(of: account).count
            do {
                _ = try await Self.extend(stack, original, days: 3, requestID: UUID().uuidString.lowercased())
                Issue.record("an expired subscription was extended")
            } catch let error as RPCError {
                #expect(error.code == .failedPrecondition)
                #expect(error.message.contains("error 4030004"), "\(error.message)")
            }
            #expect(try await stack.history(of: account).count == before)
        }
    }

    @Test(
        "each App Store operation rate-limited past the client's retries is RESOURCE_EXHAUSTED and changes nothing")
    func rateLimited() async throws {
        try await StoreSimStack.with { stack in
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            let product = "com.example.pro.monthly"
            let massID = UUID().uuidString.lowercased()
            let _: MassExtendAppleRenewalDateResponse = try await stack.verifierClient.call(
                VerifierRPC.massExtendAppleRenewalDate.name,
                MassExtendAppleRenewalDateRequest(
                    productID: product, environment: .sandbox, days: 1, reasonCode: 3, requestID: massID,
                    reason: "outage"))
            let client = stack.verifierClient
            // Each operation, the path of its App Store endpoint, and the call.
            let operations: [(String, String, @Sendable () async throws -> Void)] = [
                (
                    "extend", "/inApps/v1/subscriptions/extend/\(original)",
                    {
                        _ = try await Self.extend(stack, original, days: 3, requestID: UUID().uuidString.lowercased())
                    }
                ),
                (
                    "mass extend", "/inApps/v1/subscriptions/extend/mass",
                    {
                        let _: MassExtendAppleRenewalDateResponse = try await client.call(
                            VerifierRPC.massExtendAppleRenewalDate.name,
                            MassExtendAppleRenewalDateRequest(
                                productID: product, environment: .sandbox, days: 2, reasonCode: 3,
                                requestID: UUID().uuidString.lowercased(), reason: "outage"))
                    }
                ),
                (
                    "mass extension status", "/inApps/v1/subscriptions/extend/mass/\(product)/\(massID)",
                    {
                        let _: GetAppleMassExtensionStatusResponse = try await client.call(
                            VerifierRPC.getAppleMassExtensionStatus.name,
                            GetAppleMassExtensionStatusRequest(
                                productID: product, requestID: massID, environment: .sandbox))
                    }
                ),
                (
                    "consumption", "/inApps/v2/transactions/consumption/\(original)",
                    {
                        let _: SendAppleConsumptionInformationResponse = try await client.call(
                            VerifierRPC.sendAppleConsumptionInformation.name,
                            SendAppleConsumptionInformationRequest(
                                transactionID: original, environment: .sandbox, customerConsented: true,
                                deliveryStatus: "DELIVERED", sampleContentProvided: false,
                                refundPreference: "DECLINE", reason: "ticket 12"))
                    }
                ),
                (
                    "refund history", "/inApps/v2/refund/lookup/\(original)",
                    {
                        let _: GetAppleRefundHistoryResponse = try await client.call(
                            VerifierRPC.getAppleRefundHistory.name,
                            GetAppleRefundHistoryRequest(
                                transactionID: original, environment: .sandbox, reason: "ticket 17"))
                    }
                ),
                (
                    "app account token", "/appAccountToken",
                    {
                        let _: SetAppleAppAccountTokenResponse = try await client.call(
                            VerifierRPC.setAppleAppAccountToken.name,
                            SetAppleAppAccountTokenRequest(
                                originalTransactionID: original, environment: .sandbox, accountID: account,
                                reason: "linked by support"))
                    }
                ),
            ]
            for (name, path, call) in operations {
                let before = try await stack.history(of: account).count
                // Every attempt the client makes (it tries an answer 429 four times) is refused.
                try await stack.control("apple/api-faults", ["count": 4, "status": 429, "path": path])
                do {
                    try await call()
                    Issue.record("\(name): a rate-limited call was taken")
                } catch let error as RPCError {
                    #expect(error.code == .resourceExhausted, "\(name): \(error)")
                }
                #expect(try await stack.control("apple/api-faults")["remaining"] as? Int == 0, "\(name)")
                #expect(try await stack.history(of: account).count == before, "\(name)")
            }
        }
    }

    @Test("refund history lists a refund the ledger knows and audits the read; set-token links a purchase")
    func refundsAndToken() async throws {
        try await StoreSimStack.with { stack in
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            try await stack.control("apple/refund", ["transactionId": original])
            _ = try await stack.eventually(account, "the refund") { !$0.allowed }
            let refunds: GetAppleRefundHistoryResponse = try await stack.verifierClient.call(
                VerifierRPC.getAppleRefundHistory.name,
                GetAppleRefundHistoryRequest(transactionID: original, environment: .sandbox, reason: "ticket 17"))
            #expect(refunds.refunds.map(\.transactionID) == [original])
            #expect(refunds.refunds.map(\.knownBefore) == [true])
            let read = try #require(try await stack.history(of: account).first { $0.storeSubtype == "REFUND_HISTORY" })
            #expect(read.kind == .storeAction && read.reason == "ticket 17")

            // A purchase made without a token, linked by support.
            let bought = try await stack.control("apple/buy", ["productId": "com.example.pro.monthly"])
            let other = try #require(bought["originalTransactionId"] as? String)
            try await stack.control("clock/advance", ["by": "+1h"])
            let customer = "customer-\(UUID().uuidString.prefix(8))"
            let set: SetAppleAppAccountTokenResponse = try await stack.verifierClient.call(
                VerifierRPC.setAppleAppAccountToken.name,
                SetAppleAppAccountTokenRequest(
                    originalTransactionID: other, environment: .sandbox, accountID: customer,
                    reason: "bought before signing in"))
            #expect(set.subscription?.accountID == customer)
            #expect(set.subscription?.storeAccountRef == set.appAccountToken)
            _ = try await stack.eventually(customer, "access after the link") { $0.allowed }
        }
    }
}
