import Foundation
import Model
import RPC
import Wire

/// The entitlement service's RPC methods. Checks are answered from memory on the event loop that
/// read them; a policy reload reads its file off the loops.
enum EntitlementMethods {
    static let maxBatch = 100
    static let maxGrants = 100

    static func register(
        on router: RPCRouter, view: EntitlementView, policies: PolicyStore?, now: @escaping @Sendable () -> Int64
    ) {
        let service = EntitlementService.serviceName
        router.inline("\(service)/CheckAccess") { (_, request: CheckAccessRequest) in
            try check(request, view: view, policy: policies?.policy, now: now())
        }
        router.inline("\(service)/CheckAccessBatch") { (_, request: CheckAccessBatchRequest) in
            guard request.checks.count <= maxBatch else {
                throw RPCError(.invalidArgument, "at most \(maxBatch) checks per batch, got \(request.checks.count)")
            }
            let policy = policies?.policy
            let at = now()
            return CheckAccessBatchResponse(
                results: try request.checks.map { try check($0, view: view, policy: policy, now: at) })
        }
        router.inline("\(service)/ListEntitlements") { (_, request: ListEntitlementsRequest) in
            try list(request, view: view, policy: policies?.policy, now: now())
        }
        router.unary("\(service)/ReloadPolicy") { (_, _: ReloadPolicyRequest) in
            guard let policies else {
                throw RPCError(.failedPrecondition, "no policy file is configured (ENTITLEMENT_POLICY_FILE)")
            }
            do {
                let policy = try policies.reload()
                return ReloadPolicyResponse(
                    version: policy.version, products: UInt32(policy.productCount),
                    capabilities: UInt32(policy.capabilityCount))
            } catch {
                throw RPCError(.failedPrecondition, "the policy in force is unchanged: \(error)")
            }
        }
    }

    static func checkAccount(_ accountID: String) throws {
        guard !accountID.isEmpty, accountID.utf8.count <= 256 else {
            throw RPCError(.invalidArgument, "account_id must be 1 to 256 bytes")
        }
    }

    /// One check: the union over the account's subscriptions that grant the capability, with the
    /// subscription behind the answer (the one that gives the latest end, or the nearest miss).
    static func check(_ request: CheckAccessRequest, view: EntitlementView, policy: ProductPolicy?, now: Int64) throws
        -> CheckAccessResponse
    {
        try checkAccount(request.accountID)
        guard !request.capability.isEmpty, request.capability.utf8.count <= 64 else {
            throw RPCError(.invalidArgument, "capability must be 1 to 64 bytes")
        }
        guard let policy, let capability = policy.capabilityID(named: request.capability) else {
            return CheckAccessResponse(
                reason: .unknownCapability, detail: "capability \(request.capability) is not in the policy")
        }
        let at = request.atMilliseconds ?? now
        var best: (decision: AccessDecision, subscription: Subscription)?
        for subscription in view.subscriptions(of: request.accountID)
        where policy.capabilities(of: subscription).contains(capability) {
            let decision = policy.access.decision(for: subscription, at: at)
            if let current = best {
                let union = current.decision.union(decision)
                if union != current.decision { best = (union == decision ? decision : union, subscription) }
            } else {
                best = (decision, subscription)
            }
        }
        guard let (decision, subscription) = best else {
            return CheckAccessResponse(reason: .noGrant, detail: "nothing the account has grants \(request.capability)")
        }
        let grant = AccessGrant(
            key: subscription.key, productID: subscription.productID, basePlanID: subscription.basePlanID,
            state: subscription.state,
            untilMilliseconds: decision.isAllowed ? nonZero(decision.wireUntilMilliseconds) : nil)
        switch decision {
        case .allowed(let until):
            return CheckAccessResponse(allowed: true, untilMilliseconds: until, reason: .granted, grant: grant)
        case .denied(let denial):
            return CheckAccessResponse(reason: reason(denial), grant: grant, detail: "\(denial)")
        }
    }

    static func list(_ request: ListEntitlementsRequest, view: EntitlementView, policy: ProductPolicy?, now: Int64)
        throws
        -> ListEntitlementsResponse
    {
        try checkAccount(request.accountID)
        guard let policy else { return ListEntitlementsResponse() }
        let at = request.atMilliseconds ?? now
        var entries: [String: EntitlementEntry] = [:]
        for subscription in view.subscriptions(of: request.accountID) {
            let decision = policy.access.decision(for: subscription, at: at)
            guard case .allowed(let until) = decision else { continue }
            for capability in policy.capabilities(of: subscription) {
                let name = policy.name(of: capability)
                var entry = entries[name] ?? EntitlementEntry(capability: name, untilMilliseconds: until, grants: [])
                if let current = entry.untilMilliseconds { entry.untilMilliseconds = until.map { max($0, current) } }
                if entry.grants.count < maxGrants {
                    entry.grants.append(
                        AccessGrant(
                            key: subscription.key, productID: subscription.productID,
                            basePlanID: subscription.basePlanID,
                            state: subscription.state, untilMilliseconds: until))
                }
                entries[name] = entry
            }
        }
        return ListEntitlementsResponse(entitlements: entries.keys.sorted().map { entries[$0]! })
    }

    static func reason(_ denial: AccessDecision.Denial) -> AccessReason {
        switch denial {
        case .unknownCapability: .unknownCapability
        case .noGrant: .noGrant
        case .expired: .expired
        case .revoked: .revoked
        case .stateDenies: .stateDenies
        }
    }

    static func nonZero(_ value: Int64) -> Int64? { value == 0 ? nil : value }
}
