import Foundation
import Model
import RPC
import Testing
import Wire

/// A mass renewal-date extension through the whole system and the store simulator: Apple
/// accepts it, works through the product's subscribers over several status reads, each
/// extended subscriber's access follows its RENEWAL_EXTENDED, and Apple's refusals come back as
/// their documented RPC errors.
@Suite("End to end: App Store mass extension")
struct AppleMassExtensionScenarioTests {
    static let product = "com.example.pro.monthly"

    static func status(_ stack: StoreSimStack, _ requestID: String, product: String = product) async throws
        -> GetAppleMassExtensionStatusResponse
    {
        try await stack.verifierClient.call(
            VerifierRPC.getAppleMassExtensionStatus.name,
            GetAppleMassExtensionStatusRequest(productID: product, requestID: requestID, environment: .sandbox))
    }

    /// One subscriber: its account, original transaction id and first paid end.
    struct Subscriber: Sendable {
        let account: String
        let original: String
        let until: Int64
    }

    static func subscribe(_ stack: StoreSimStack) async throws -> Subscriber {
        let account = UUID().uuidString.lowercased()
        let (original, _) = try await stack.buyOnAppStore(account: account)
        let access = try await stack.eventually(account, "the purchase") { $0.allowed }
        return Subscriber(account: account, original: original, until: try #require(access.untilMilliseconds))
    }

    @Test("every eligible subscriber is extended over time, each audited; one at Apple's limit fails")
    func massExtension() async throws {
        try await StoreSimStack.with { stack in try await Self.massExtension(stack) }
    }

    static func massExtension(_ stack: StoreSimStack) async throws {
        let accounts = [try await subscribe(stack), try await subscribe(stack), try await subscribe(stack)]
        try await stack.control("clock/advance", ["by": "+1h"])
        // The last subscriber was extended twice this year already: Apple's limit.
        let limited = accounts[2]
        for days in [1, 1] as [Int32] {
            let _: ExtendAppleRenewalDateResponse = try await stack.verifierClient.call(
                VerifierRPC.extendAppleRenewalDate.name,
                ExtendAppleRenewalDateRequest(
                    originalTransactionID: limited.original, environment: .sandbox, days: days,
                    requestID: UUID().uuidString.lowercased(), reason: "earlier outage"))
        }
        try await stack.control("clock/advance", ["by": "+1m"])

        let requestID = UUID().uuidString.lowercased()
        let started: MassExtendAppleRenewalDateResponse = try await stack.verifierClient.call(
            VerifierRPC.massExtendAppleRenewalDate.name,
            MassExtendAppleRenewalDateRequest(
                productID: product, storefrontCountryCodes: ["USA"], environment: .sandbox, days: 5,
                reasonCode: 3, requestID: requestID, reason: "outage on the 9th"))
        #expect(started.requestID == requestID)
        #expect(started.auditedSubscriptions == 3)
        for entry in accounts {
            let action = try #require(
                try await stack.history(of: entry.account).first { $0.storeSubtype == "MASS_EXTEND_RENEWAL_DATE" })
            #expect(action.kind == .storeAction && action.reason == "outage on the 9th")
            #expect(!(action.actor ?? "").isEmpty)
            #expect(action.detail?.contains(requestID) == true)
        }

        // Apple works through the subscribers a few at a time: not complete at the first read.
        var reads: [GetAppleMassExtensionStatusResponse] = [try await status(stack, requestID)]
        #expect(reads[0].complete == false)
        while !reads[reads.count - 1].complete, reads.count < 10 {
            reads.append(try await status(stack, requestID))
        }
        let done = reads[reads.count - 1]
        #expect(done.complete && done.completeTimeMilliseconds != nil)
        #expect(done.succeededCount == 2 && done.failedCount == 1)

        // The notifications reach the verifier with the simulator's next delivery; access follows.
        try await stack.control("clock/advance", ["by": "+1m"])
        for entry in accounts.prefix(2) {
            _ = try await stack.eventually(entry.account, "the mass-extended end") {
                $0.untilMilliseconds == entry.until + 5 * 86_400_000
            }
            _ = try await stack.eventuallyInHistory(of: entry.account, "RENEWAL_EXTENDED") {
                $0.contains("RENEWAL_EXTENDED")
            }
        }
        _ = try await stack.eventuallyInHistory(of: limited.account, "RENEWAL_EXTENSION") {
            $0.contains("RENEWAL_EXTENSION")
        }
        let limitedAccess = try await stack.eventually(limited.account, "the limited end") {
            $0.untilMilliseconds == limited.until + 2 * 86_400_000
        }
        #expect(limitedAccess.allowed)
    }

    @Test("an unknown product and an unknown request id are Apple's refusals as RPC errors; nothing changes")
    func massExtensionRefusals() async throws {
        try await StoreSimStack.with { stack in
            let account = UUID().uuidString.lowercased()
            _ = try await stack.buyOnAppStore(account: account)
            let before = try await stack.history(of: account).count
            do {
                let _: MassExtendAppleRenewalDateResponse = try await stack.verifierClient.call(
                    VerifierRPC.massExtendAppleRenewalDate.name,
                    MassExtendAppleRenewalDateRequest(
                        productID: "com.example.nothing", environment: .sandbox, days: 5,
                        requestID: UUID().uuidString.lowercased(), reason: "outage"))
                Issue.record("an unknown product was accepted")
            } catch let error as RPCError {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains("error 4000023"), "\(error.message)")
            }
            do {
                _ = try await Self.status(stack, UUID().uuidString.lowercased())
                Issue.record("an unknown request id had a status")
            } catch let error as RPCError {
                #expect(error.code == .notFound)
                #expect(error.message.contains("error 4040009"), "\(error.message)")
            }
            #expect(try await stack.history(of: account).count == before)
        }
    }
}
