import Foundation
import Model
import RPC
import Testing
import Wire

@testable import EntitlementService

/// The entitlement methods for a caller with the read-only role (`RPC_READ_ONLY`): the checks
/// answer with the store ids cut, on the hot path and when handed off; a policy reload is refused.
@Suite("Entitlement: the read-only role")
struct EntitlementReadOnlyTests {
    typealias Fixture = EntitlementViewTests

    static func transports(_ view: EntitlementView) throws -> (
        support: InProcessTransport, operator: InProcessTransport
    ) {
        var configuration = RPCServerConfiguration()
        configuration.readOnlyIdentities = ["support"]
        let server = try ReadYourWritesTests.server(view, configuration: configuration)
        return (
            InProcessTransport(server: server, caller: RPCCaller(identities: ["support"], peer: "test")),
            InProcessTransport(server: server, caller: RPCCaller(identities: ["operator"], peer: "test"))
        )
    }

    @Test("every method marked @read has a redacting path, the raw CheckAccess included, and no other")
    func readMethodsRedacted() throws {
        let router = RPCRouter()
        EntitlementMethods.register(on: router, view: EntitlementView(), policies: nil, now: { Fixture.now })
        // Health is the host's (ServiceHost registers it, by role).
        let expected = Set(EntitlementRPC.readMethods.map(\.name)).subtracting([EntitlementRPC.health.name])
        #expect(Set(router.readOnlyMethodNames) == expected)
    }

    @Test("CheckAccess answers support with the grant's store id cut, on the loop and once a write is applied")
    func checkAccessRedacted() async throws {
        let view = EntitlementView()
        view.load([Fixture.apple("2000000001", account: "alice", expires: Fixture.now + Fixture.day)], position: 1)
        let (support, operator_) = try Self.transports(view)
        let request = CheckAccessRequest(accountID: "alice", capability: "pro")
        let full = try await operator_.call(EntitlementRPC.checkAccess, request, timeout: nil)
        #expect(full.grant?.key?.storeID == "2000000001")
        let seen = try await support.call(EntitlementRPC.checkAccess, request, timeout: nil)
        #expect(seen.grant?.key?.storeID == "…0001")
        #expect(seen == full.redacted())
        async let later = support.call(
            EntitlementRPC.checkAccess, CheckAccessRequest(accountID: "bob", capability: "pro", minPosition: 2),
            timeout: nil)
        while view.waiters.count == 0 { await Task.yield() }
        view.apply(
            position: 2, subscription: Fixture.apple("2000000002", account: "bob", expires: Fixture.now + Fixture.day))
        #expect(try await later.grant?.key?.storeID == "…0002")
        await #expect(
            throws: RPCError(
                .permissionDenied,
                "support has the read-only role (RPC_READ_ONLY) and may not call \(EntitlementRPC.reloadPolicy.name)")
        ) {
            _ = try await support.call(EntitlementRPC.reloadPolicy, ReloadPolicyRequest(), timeout: nil)
        }
    }
}
