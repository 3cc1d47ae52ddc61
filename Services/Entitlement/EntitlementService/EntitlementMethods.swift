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
        let rules = policy.access
        return view.withAccount(request.accountID, policy: policy) { tables, account in
            var best: (decision: AccessDecision, holding: Holding)?
            if let account {
                let capabilities = tables.capabilities.sets
                tables.forEachHolding(of: account) { holding in
                    guard capabilities[Int(holding.product)].contains(capability) else { return }
                    let decision = rules.decision(for: holding.facts, at: at)
                    if let current = best {
                        let union = current.decision.union(decision)
                        if union != current.decision { best = (union, holding) }
                    } else {
                        best = (decision, holding)
                    }
                }
            }
            guard let (decision, holding) = best else {
                return CheckAccessResponse(
                    reason: .noGrant, detail: "nothing the account has grants \(request.capability)")
            }
            let grant = grant(holding, tables: tables, until: decision.isAllowed ? nonZero(decision.wireUntilMilliseconds) : nil)
            switch decision {
            case .allowed(let until):
                return CheckAccessResponse(allowed: true, untilMilliseconds: until, reason: .granted, grant: grant)
            case .denied(let denial):
                return CheckAccessResponse(reason: reason(denial), grant: grant, detail: "\(denial)")
            }
        }
    }

    static func grant(_ holding: Holding, tables: borrowing ViewTables, until: Int64?) -> AccessGrant {
        let product = tables.products[Int(holding.product)]
        return AccessGrant(
            key: tables.subscriptionKey(of: holding), productID: product.productID, basePlanID: product.basePlanID,
            state: holding.subscriptionState, untilMilliseconds: until)
    }

    static func list(_ request: ListEntitlementsRequest, view: EntitlementView, policy: ProductPolicy?, now: Int64)
        throws
        -> ListEntitlementsResponse
    {
        try checkAccount(request.accountID)
        guard let policy else { return ListEntitlementsResponse() }
        let at = request.atMilliseconds ?? now
        let rules = policy.access
        let entries = view.withAccount(request.accountID, policy: policy) { tables, account in
            var entries: [CapabilityID: EntitlementEntry] = [:]
            guard let account else { return entries }
            let capabilities = tables.capabilities.sets
            tables.forEachHolding(of: account) { holding in
                guard case .allowed(let until) = rules.decision(for: holding.facts, at: at) else { return }
                for capability in capabilities[Int(holding.product)] {
                    var entry =
                        entries[capability]
                        ?? EntitlementEntry(
                            capability: policy.name(of: capability), untilMilliseconds: until, grants: [])
                    if let current = entry.untilMilliseconds {
                        entry.untilMilliseconds = until.map { max($0, current) }
                    }
                    if entry.grants.count < maxGrants {
                        entry.grants.append(grant(holding, tables: tables, until: until))
                    }
                    entries[capability] = entry
                }
            }
            return entries
        }
        return ListEntitlementsResponse(entitlements: entries.values.sorted { $0.capability < $1.capability })
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
