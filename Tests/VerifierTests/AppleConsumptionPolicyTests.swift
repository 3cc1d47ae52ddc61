import AppStore
import Config
import Foundation
import Model
import Testing
import Wire

@testable import VerifierService

@Suite("App Store consumption policy", .serialized)
struct AppleConsumptionPolicyTests {
    static let policy = AppleConsumptionPolicy(
        answerAutomatically: true, customerConsented: true, deliveryStatus: "DELIVERED", sampleContentProvided: false,
        refundPreference: "DECLINE")

    static func consumptionRequest(_ harness: AppleAdapterHarness) async throws {
        let signed = try harness.notification(
            type: "CONSUMPTION_REQUEST", transaction: harness.transaction(), renewal: harness.renewal())
        let (status, _) = try await harness.deliver(signed)
        #expect(status == 200)
        await harness.adapter.processingIdle()
    }

    @Test("with an automatic policy a CONSUMPTION_REQUEST is answered at once and audited as the policy's action")
    func answersAutomatically() async throws {
        let harness = try await AppleAdapterHarness(consumptionPolicy: Self.policy)
        harness.api.set("2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
        try await Self.consumptionRequest(harness)
        #expect(harness.api.calls.contains("sendConsumptionInformation 2000000009 DELIVERED DECLINE"))
        // The ledger's trail, newest first: the answer after the request.
        let history = try await harness.history(AppleStoreOperationsTests.key)
        let request = try #require(history.firstIndex { $0.kind == .consumptionRequest })
        let answer = try #require(history.firstIndex { $0.storeSubtype == "SEND_CONSUMPTION_INFORMATION" })
        #expect(answer < request)
        #expect(history[answer].actor == "policy APPLE_CONSUMPTION_POLICY_FILE")
        #expect(history[answer].reason?.hasPrefix("automatic answer to CONSUMPTION_REQUEST ") == true)
        await harness.stop()
    }

    @Test("without a policy, or with one that does not answer by itself, nothing is sent")
    func noPolicyNoAnswer() async throws {
        var manual = Self.policy
        manual.answerAutomatically = false
        for policy in [nil, manual] as [AppleConsumptionPolicy?] {
            let harness = try await AppleAdapterHarness(consumptionPolicy: policy)
            harness.api.set(
                "2000000001", .init(transaction: harness.transaction(), renewal: harness.renewal(), status: 1))
            try await Self.consumptionRequest(harness)
            #expect(!harness.api.calls.contains { $0.hasPrefix("sendConsumptionInformation") })
            await harness.stop()
        }
    }

    @Test(
        "a policy file is checked: known keys, Apple's values, and never automatic without consent",
        arguments: [
            (
                #"{"answer_automatically":true,"customer_consented":false,"delivery_status":"DELIVERED","sample_content_provided":false}"#,
                "answers automatically without customer_consented"
            ),
            (
                #"{"answer_automatically":true,"customer_consented":true,"delivery_status":"LOST","sample_content_provided":false}"#,
                "is refused: delivery_status must be one of Apple's deliveryStatus values"
            ),
            (
                #"{"answer_automatically":true,"customer_consented":true,"delivery_status":"DELIVERED","sample_content_provided":false,"play_time":3}"#,
                "has \"play_time\", which is not one of"
            ),
            (#"{"answer_automatically":true}"#, "needs answer_automatically, customer_consented, delivery_status and"),
            ("[]", "is not a JSON object"),
        ])
    func refusesBadPolicies(json: String, problem: String) {
        do {
            _ = try AppleConsumptionPolicy.parse(Data(json.utf8))
            Issue.record("\(json) was taken")
        } catch {
            #expect(error.problem.hasPrefix(problem), "\(error.problem)")
        }
    }

    @Test("an invalid policy file refuses to start, naming APPLE_CONSUMPTION_POLICY_FILE; a valid one is read")
    func settingsReadThePolicy() throws {
        let files = try AppleSettingsTests.Files()
        defer { files.remove() }
        let path = files.directory.appendingPathComponent("policy.json").path
        try Data(
            #"{"answer_automatically":true,"customer_consented":false,"delivery_status":"DELIVERED","sample_content_provided":true}"#
                .utf8
        )
        .write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try AppleSettings(
                environment: EnvironmentReader(files.environment(["APPLE_CONSUMPTION_POLICY_FILE": path])))
        } throws: { ($0 as? ConfigError)?.variable == "APPLE_CONSUMPTION_POLICY_FILE" }
        try Data(
            #"{"answer_automatically":true,"customer_consented":true,"delivery_status":"DELIVERED","sample_content_provided":true}"#
                .utf8
        )
        .write(to: URL(fileURLWithPath: path))
        let settings = try AppleSettings(
            environment: EnvironmentReader(files.environment(["APPLE_CONSUMPTION_POLICY_FILE": path])))
        #expect(
            settings.consumptionPolicy
                == AppleConsumptionPolicy(
                    answerAutomatically: true, customerConsented: true, deliveryStatus: "DELIVERED",
                    sampleContentProvided: true))
    }
}
