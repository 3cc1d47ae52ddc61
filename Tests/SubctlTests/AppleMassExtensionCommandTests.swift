import Model
import Sockets
import SubctlKit
import Synchronization
import Testing
import Wire

/// Answers a mass extension's start, then its status from a list, one answer a call.
final class MassExtensionTransport: BytesTransport {
    let started: [UInt8]
    let statuses: Mutex<[[UInt8]]>
    let methods = Mutex<[String]>([])

    init(started: MassExtendAppleRenewalDateResponse, statuses: [GetAppleMassExtensionStatusResponse]) {
        self.started = started.serialized()
        self.statuses = Mutex(statuses.map { $0.serialized() })
    }

    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        methods.withLock { $0.append(method) }
        if method.hasSuffix("/MassExtendAppleRenewalDate") { return started }
        guard let next = statuses.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
            throw SubctlError(.rpc(.unimplemented), method)
        }
        return next
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        ([], SubctlError(.rpc(.unimplemented), method))
    }
}

@Suite("subctl apple extend --all and extend-status")
struct AppleMassExtensionCommandTests {
    static let options = AppleOperationCommandTests.options
    static let requestID = "6f1c1a52-3c1e-4b7a-9d0e-2f7a4c9b8e11"

    @Test("extend --all parses into a mass extension; extend-status into a status read")
    func parses() throws {
        #expect(
            try SubctlCommand.parse([
                "apple", "extend", "--all", "--product", "pro.monthly", "--storefront", "usa,CAN", "--days", "5",
                "--reason-code", "3", "--request-id", Self.requestID, "--every", "0.5", "--reason", "outage",
                "--addr", "127.0.0.1:8000",
            ])
                == .appleOperation(
                    .massExtend(
                        MassExtendAppleRenewalDateRequest(
                            productID: "pro.monthly", storefrontCountryCodes: ["USA", "CAN"], days: 5, reasonCode: 3,
                            requestID: Self.requestID, reason: "outage"),
                        wait: true, every: .milliseconds(500)),
                    options: Self.options))
        #expect(
            try SubctlCommand.parse([
                "apple", "extend-status", "--product", "pro.monthly", "--request-id", Self.requestID, "--addr",
                "127.0.0.1:8000",
            ])
                == .appleOperation(
                    .massExtensionStatus(
                        GetAppleMassExtensionStatusRequest(productID: "pro.monthly", requestID: Self.requestID)),
                    options: Self.options))
    }

    @Test(
        "a malformed mass extension is a usage error naming what to give",
        arguments: [
            (
                ["apple", "extend", "--all", "--days", "5", "--reason", "r", "--addr", "h:1"],
                "USAGE: apple extend --all needs --product PRODUCT_ID"
            ),
            (
                [
                    "apple", "extend", "--all", "--product", "p", "--storefront", "US", "--days", "5", "--reason", "r",
                    "--addr", "h:1",
                ],
                "USAGE: --storefront expects three-letter codes separated by commas (USA,CAN)"
            ),
            (
                ["apple", "extend-status", "--product", "p", "--addr", "h:1"],
                "USAGE: apple extend-status needs --product PRODUCT_ID and --request-id UUID"
            ),
        ])
    func refusesMalformed(arguments: [String], expected: String) {
        do {
            _ = try SubctlCommand.parse(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test("extend --all prints the request id, then the progress until Apple has finished")
    func showsProgressUntilComplete() async throws {
        let transport = MassExtensionTransport(
            started: MassExtendAppleRenewalDateResponse(requestID: Self.requestID, auditedSubscriptions: 3),
            statuses: [
                GetAppleMassExtensionStatusResponse(requestID: Self.requestID, succeededCount: 2),
                GetAppleMassExtensionStatusResponse(
                    requestID: Self.requestID, complete: true, completeTimeMilliseconds: 1_767_225_600_000,
                    succeededCount: 2, failedCount: 1),
            ])
        let lines = Mutex<[String]>([])
        let runner = CommandRunner(write: { line in lines.withLock { $0.append(line) } })
        try await runner.run(
            .appleOperation(
                .massExtend(
                    MassExtendAppleRenewalDateRequest(
                        productID: "pro.monthly", days: 5, requestID: Self.requestID, reason: "outage"),
                    wait: true, every: .milliseconds(1)),
                options: Self.options), transport: transport, standardInput: { "" })
        #expect(
            lines.withLock { $0 } == [
                "mass extension of pro.monthly by 5 days accepted: request-id \(Self.requestID) audited-subscriptions 3",
                "mass-extension \(Self.requestID) running succeeded 2 failed 0",
                "mass-extension \(Self.requestID) complete 2026-01-01T00:00:00Z succeeded 2 failed 1",
            ])
        #expect(transport.methods.withLock { $0.count } == 3)
    }
}

@Suite("subctl apple consumption")
struct AppleConsumptionCommandTests {
    @Test("consumption parses into Send Consumption Information; it needs --consented and --delivery")
    func parses() throws {
        #expect(
            try SubctlCommand.parse([
                "apple", "consumption", "2000000009", "--consented", "--delivery", "delivered", "--sample",
                "--refund-preference", "decline", "--reason", "ticket", "--addr", "127.0.0.1:8000",
            ])
                == .appleOperation(
                    .consumption(
                        SendAppleConsumptionInformationRequest(
                            transactionID: "2000000009", customerConsented: true, deliveryStatus: "DELIVERED",
                            sampleContentProvided: true, refundPreference: "DECLINE", reason: "ticket")),
                    options: AppleOperationCommandTests.options))
        for (arguments, expected) in [
            (
                ["apple", "consumption", "1", "--delivery", "DELIVERED", "--reason", "r", "--addr", "h:1"],
                "USAGE: apple consumption needs --consented: consumption data is sent only with the customer's consent"
            ),
            (
                ["apple", "consumption", "1", "--consented", "--reason", "r", "--addr", "h:1"],
                "USAGE: apple consumption needs --delivery STATUS (Apple's deliveryStatus, such as DELIVERED)"
            ),
        ] {
            do {
                _ = try SubctlCommand.parse(arguments)
                Issue.record("\(arguments) parsed")
            } catch {
                #expect(error.description == expected)
            }
        }
    }
}
