import Foundation
import Model
import RPC
import Testing
import Wire

/// Answering Apple's CONSUMPTION_REQUEST through the whole system and the store simulator: the
/// answer is audited on the purchase, Apple's later refund of the same transaction follows it in
/// the trail, and Apple's refusals come back as their documented RPC errors.
@Suite("End to end: App Store consumption information")
struct AppleConsumptionScenarioTests {
    static func send(_ stack: StoreSimStack, _ request: SendAppleConsumptionInformationRequest) async throws
        -> SendAppleConsumptionInformationResponse
    {
        try await stack.verifierClient.call(VerifierRPC.sendAppleConsumptionInformation.name, request)
    }

    static func request(_ transactionID: String, consented: Bool = true) -> SendAppleConsumptionInformationRequest {
        SendAppleConsumptionInformationRequest(
            transactionID: transactionID, environment: .sandbox, customerConsented: consented,
            deliveryStatus: "DELIVERED", sampleContentProvided: false, refundPreference: "DECLINE",
            reason: "ticket 12")
    }

    @Test("an answer is audited on the purchase, and Apple's refund of the same transaction follows it")
    func answerThenOutcome() async throws {
        try await StoreSimStack.with { stack in try await Self.answerThenOutcome(stack) }
    }

    static func answerThenOutcome(_ stack: StoreSimStack) async throws {
        let account = UUID().uuidString.lowercased()
        let (original, _) = try await stack.buyOnAppStore(account: account)
        try await stack.control("apple/consumption-request", ["transactionId": original])
        _ = try await stack.eventuallyInHistory(of: account, "CONSUMPTION_REQUEST") {
            $0.contains("CONSUMPTION_REQUEST")
        }
        try await stack.control("clock/advance", ["by": "+1h"])
        let answered = try await send(stack, request(original))
        #expect(answered.subscription?.key.storeID == original)
        try await stack.control("apple/refund", ["transactionId": original])
        _ = try await stack.eventually(account, "the refund") { !$0.allowed }
        let events = try await stack.history(of: account)
        let sent = try #require(events.firstIndex { $0.storeSubtype == "SEND_CONSUMPTION_INFORMATION" })
        #expect(events[sent].kind == .storeAction && events[sent].reason == "ticket 12")
        #expect(!(events[sent].actor ?? "").isEmpty)
        #expect(events[sent].detail?.hasPrefix("transaction \(original):") == true)
        let refund = try #require(events.lastIndex { $0.kind == .refunded })
        #expect(refund > sent)
    }

    @Test("with an automatic policy the verifier answers the CONSUMPTION_REQUEST by itself, audited as the policy's")
    func automaticAnswer() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("consumption-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let policy = directory.appendingPathComponent("policy.json")
        let json =
            #"{"answer_automatically":true,"customer_consented":true,"delivery_status":"DELIVERED","#
            + #""sample_content_provided":false,"refund_preference":"DECLINE"}"#
        try Data(json.utf8).write(to: policy)
        let stack = try await StoreSimStack(verifier: ["APPLE_CONSUMPTION_POLICY_FILE": policy.path])
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            try await stack.control("clock/advance", ["by": "+1h"])
            try await stack.control("apple/consumption-request", ["transactionId": original])
            _ = try await stack.eventuallyKinds(of: account, "the automatic answer") { $0.contains(.storeAction) }
            let events = try await stack.history(of: account)
            let request = try #require(events.firstIndex { $0.kind == .consumptionRequest })
            let answer = try #require(events.firstIndex { $0.storeSubtype == "SEND_CONSUMPTION_INFORMATION" })
            #expect(answer > request)
            #expect(events[answer].actor == "policy APPLE_CONSUMPTION_POLICY_FILE")
            #expect(events[answer].detail?.contains("refundPreference DECLINE") == true)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("without consent nothing is sent; an unknown transaction is NOT_FOUND; neither changes anything")
    func refusals() async throws {
        try await StoreSimStack.with { stack in
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            let before = try await stack.history(of: account).count
            do {
                _ = try await Self.send(stack, Self.request(original, consented: false))
                Issue.record("an answer without consent was sent")
            } catch let error as RPCError {
                #expect(error.code == .failedPrecondition)
            }
            do {
                _ = try await Self.send(stack, Self.request("9999999999"))
                Issue.record("an unknown transaction was answered")
            } catch let error as RPCError {
                #expect(error.code == .notFound)
            }
            #expect(try await stack.history(of: account).count == before)
        }
    }
}
