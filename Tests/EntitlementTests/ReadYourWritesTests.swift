import Foundation
import Model
import Observability
import RPC
import Testing
import Wire

@testable import EntitlementService

/// CheckAccess with `min_position`: answered from a view that has applied that change-feed
/// position (a write's answer), waiting for it when the view is behind, and UNAVAILABLE when it
/// does not get there in time. Without it, or with a position the view has, it answers at once.
@Suite("Reading your own writes")
struct ReadYourWritesTests {
    typealias Fixture = EntitlementViewTests

    /// The entitlement methods on a router reached in process, on `clock`.
    static func transport(_ view: EntitlementView, clock: ManualClock) throws -> (InProcessTransport, RPCServer) {
        var configuration = RPCServerConfiguration()
        configuration.clock = clock
        let server = try server(view, configuration: configuration)
        return (InProcessTransport(server: server), server)
    }

    /// A server of the entitlement methods over `view`, with a policy that gives `pro` for
    /// `com.example.pro.monthly`.
    static func server(_ view: EntitlementView, configuration: RPCServerConfiguration) throws -> RPCServer {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID().uuidString).conf")
        try Data("capability pro\n  apple com.example.pro.monthly\n".utf8).write(to: file)
        let policies = try PolicyStore.load(path: file.path)
        let router = RPCRouter()
        EntitlementMethods.register(on: router, view: view, policies: policies, now: { Fixture.now })
        return try RPCServer(configuration: configuration, router: router)
    }

    static func waitUntil(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Test("a check for a position the view has not applied waits for it, then answers what the write did")
    func waitsForTheWrite() async throws {
        let view = EntitlementView()
        view.load([], position: 1)
        let clock = ManualClock()
        let (transport, _) = try Self.transport(view, clock: clock)
        // What the view has applied answers at once.
        let before = try await transport.call(
            EntitlementRPC.checkAccess, CheckAccessRequest(accountID: "alice", capability: "pro", minPosition: 1))
        #expect(before.allowed == false && before.reason == .noGrant)
        async let after = transport.call(
            EntitlementRPC.checkAccess, CheckAccessRequest(accountID: "alice", capability: "pro", minPosition: 2))
        await Self.waitUntil { view.waiters.count == 1 }
        view.apply(
            position: 2, subscription: Fixture.apple("2000000001", account: "alice", expires: Fixture.now + Fixture.day)
        )
        let answer = try await after
        #expect(answer.allowed == true && answer.untilMilliseconds == Fixture.now + Fixture.day)
        #expect(view.waiters.count == 0)
        // The subscriber view reads the caller's writes the same way.
        async let held = transport.call(
            EntitlementRPC.getActiveSubscriptions, GetActiveSubscriptionsRequest(accountID: "bob", minPosition: 3))
        await Self.waitUntil { view.waiters.count == 1 }
        view.apply(
            position: 3, subscription: Fixture.apple("2000000002", account: "bob", expires: Fixture.now + Fixture.day))
        #expect(try await held.subscriptions.map(\.key?.storeID) == ["2000000002"])
    }

    @Test("a position the view does not reach in time is UNAVAILABLE, saying where the view is")
    func behindIsUnavailable() async throws {
        let view = EntitlementView()
        view.load([], position: 3)
        let clock = ManualClock()
        let (transport, _) = try Self.transport(view, clock: clock)
        async let answer: Result<CheckAccessResponse, RPCError> = {
            do throws(RPCError) {
                return .success(
                    try await transport.call(
                        EntitlementRPC.checkAccess,
                        CheckAccessRequest(accountID: "alice", capability: "pro", minPosition: 9)))
            } catch {
                return .failure(error)
            }
        }()
        await Self.waitUntil { view.waiters.count == 1 && clock.sleepers > 0 }
        clock.advance(by: EntitlementMethods.longestWait)
        let result = await answer
        guard case .failure(let error) = result else {
            Issue.record("answered \(result)")
            return
        }
        #expect(
            error
                == RPCError(
                    .unavailable,
                    "this instance's view has applied the ledger's changes through position 3, not yet 9 (min_position): it follows the ledger's change feed and is behind; retry, or ask another instance"
                ))
        // A batch does not wait: its check names the position it could not read.
        await #expect(throws: RPCError.self) {
            _ = try await transport.call(
                EntitlementRPC.checkAccessBatch,
                CheckAccessBatchRequest(checks: [CheckAccessRequest(accountID: "a", capability: "pro", minPosition: 9)])
            )
        }
    }
}
