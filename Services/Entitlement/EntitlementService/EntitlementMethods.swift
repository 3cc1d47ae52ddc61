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
        router.register(
            EntitlementRPC.checkAccess,
            .inline({ bytes, output in
                guard
                    let wanted = try checkPacked(bytes, into: &output, view: view, policy: policies?.policy, now: now)
                else { return }
                // A read of a write the view has not applied yet: answered once it has.
                throw readAfter(wanted, request: [UInt8](bytes), view: view, policies: policies, now: now)
            }),
            // An account id, a capability and a time: a few hundred bytes.
            limits: RPCMethodLimits(maxRequestBytes: 4096),
            prefetch: { payloads in view.prefetch(checks: payloads) })
        // The batch cap is held on the wire bytes, before protobuf-c builds a single check.
        let batchLimits = RPCMethodLimits(
            maxRequestBytes: 64 * 1024, budget: DecodeBudget(maxFields: 4 * maxBatch + 1, maxRepeated: maxBatch))
        router.inline(EntitlementRPC.checkAccessBatch, limits: batchLimits) { (request: CheckAccessBatchRequest) in
            guard request.checks.count <= maxBatch else {
                throw EntitlementError(.badRequest, "at most \(maxBatch) checks per batch, got \(request.checks.count)")
            }
            let policy = policies?.policy
            let at = now()
            return CheckAccessBatchResponse(
                results: try request.checks.map { try check($0, view: view, policy: policy, now: at) })
        }
        router.inline(EntitlementRPC.listEntitlements) { (request: ListEntitlementsRequest) in
            try list(request, view: view, policy: policies?.policy, now: now())
        }
        registerSubscriberView(on: router, view: view, policies: policies, now: now)
        router.inline(EntitlementRPC.getAccessTimeline) { (request: GetAccessTimelineRequest) in
            try timeline(request, view: view, policy: policies?.policy)
        }
        router.unary(EntitlementRPC.reloadPolicy) { (_, _: ReloadPolicyRequest) in
            guard let policies else {
                throw EntitlementError(.noPolicyFile, "no policy file is configured (ENTITLEMENT_POLICY_FILE)")
            }
            do {
                let policy = try policies.reload()
                return ReloadPolicyResponse(
                    version: policy.version, products: UInt32(policy.productCount),
                    capabilities: UInt32(policy.capabilityCount))
            } catch {
                throw EntitlementError(.policyRefused, "the policy in force is unchanged: \(error)", cause: error)
            }
        }
    }

    static func checkAccount(_ byteCount: Int) throws(EntitlementError) {
        guard (1...256).contains(byteCount) else {
            throw EntitlementError(.badRequest, "account_id must be 1 to 256 bytes")
        }
    }

    static func checkCapability(_ byteCount: Int) throws(EntitlementError) {
        guard (1...64).contains(byteCount) else {
            throw EntitlementError(.badRequest, "capability must be 1 to 64 bytes")
        }
    }

    static func unknownCapability(_ name: String) -> String { "capability \(name) is not in the policy" }
    static func noGrant(_ name: String) -> String { "nothing the account has grants \(name)" }

    /// One check with Swift values in and out (each check of a batch, tests): the request's
    /// bytes answered by `checkPacked`, so that a check is read and evaluated one way only.
    static func check(_ request: CheckAccessRequest, view: EntitlementView, policy: ProductPolicy?, now: Int64)
        throws(EntitlementError) -> CheckAccessResponse
    {
        var output: [UInt8] = []
        let serialized = request.serialized()
        let wanted = try serialized.span.bytes.withUnsafeBytes { (bytes) throws(EntitlementError) in
            try checkPacked(bytes, into: &output, view: view, policy: policy, now: { now })
        }
        if let wanted { throw behind(wanted, view: view) }
        // The answer was packed by protobuf-c from valid fields: it reads back.
        do { return try CheckAccessResponse(serialized: output) } catch {
            preconditionFailure("a packed CheckAccessResponse did not read back: \(error)")
        }
    }

    /// One check from the request's bytes to the response's, appended to `output`: the request
    /// read in place (`CheckAccessWire.read`), the account's access to the capability decided
    /// (`AccountAccess.evaluate`), and the answer packed from the view's C strings, with no
    /// Swift value built for either message.
    @discardableResult
    static func checkPacked(
        _ bytes: UnsafeRawBufferPointer, into output: inout [UInt8], view: EntitlementView, policy: ProductPolicy?,
        now: () -> Int64
    ) throws(EntitlementError) -> UInt64? {
        let request = try CheckAccessWire.read(bytes)
        try checkAccount(request.accountID.count)
        try checkCapability(request.capability.count)
        if let wanted = request.minPosition, !view.hasApplied(wanted) { return wanted }
        let name = String(decoding: request.capability, as: UTF8.self)
        guard let policy, let capability = policy.capabilityID(named: name) else {
            unknownCapability(name).withCString {
                CheckAccessWire.appendResponse(
                    to: &output, allowed: false, untilMilliseconds: nil, reason: .unknownCapability, grant: nil,
                    detail: $0)
            }
            return nil
        }
        let at = request.atMilliseconds ?? now()
        view.withAccount(utf8: request.accountID, policy: policy) { tables, account in
            guard
                let (decision, holding) = AccountAccess.evaluate(
                    tables, account: account, capability: capability, rules: policy.access, at: at)
            else {
                return noGrant(name).withCString {
                    CheckAccessWire.appendResponse(
                        to: &output, allowed: false, untilMilliseconds: nil, reason: .noGrant, grant: nil,
                        detail: $0)
                }
            }
            tables.withGrantCStrings(holding, product: HoldingAccess.grantingProduct(holding, capability, in: tables)) {
                storeID, productID, basePlanID in
                var grant = CheckAccessWire.Grant(
                    store: holding.store, environment: holding.environment, storeID: storeID, productID: productID,
                    basePlanID: basePlanID, state: holding.subscriptionState, untilMilliseconds: nil)
                switch decision {
                case .allowed(let until):
                    grant.untilMilliseconds = Holding.time(decision.wireUntilMilliseconds)
                    CheckAccessWire.appendResponse(
                        to: &output, allowed: true, untilMilliseconds: until, reason: .granted, grant: grant,
                        detail: nil)
                case .denied(let denial):
                    "\(denial)".withCString {
                        CheckAccessWire.appendResponse(
                            to: &output, allowed: false, untilMilliseconds: nil, reason: reason(denial),
                            grant: grant, detail: $0)
                    }
                }
            }
        }
        return nil
    }

    /// The longest a read waits for the view to apply the position it asked for.
    static let longestWait: Duration = .seconds(10)

    /// The hand-off of a CheckAccess whose `min_position` the view has not applied: the
    /// request's bytes, copied, checked again once it has.
    static func readAfter(
        _ wanted: UInt64, request: [UInt8], view: EntitlementView, policies: PolicyStore?,
        now: @escaping @Sendable () -> Int64
    ) -> RPCHandOff {
        handOff(until: wanted, view: view) {
            var output: [UInt8] = []
            let refused = request.withUnsafeBytes { bytes -> EntitlementError? in
                do throws(EntitlementError) {
                    _ = try checkPacked(bytes, into: &output, view: view, policy: policies?.policy, now: now)
                    return nil
                } catch {
                    return error
                }
            }
            return refused.map { .failure($0) } ?? .success(output)
        }
    }

    /// `body`'s answer now when the view has applied `wanted` (or none is asked for); else the
    /// call is handed off until it has (a read of the caller's own write).
    static func after<Response: ProtoMessage>(
        _ wanted: UInt64?, view: EntitlementView, _ body: @escaping @Sendable () throws -> Response
    ) throws -> Response {
        guard let wanted, !view.hasApplied(wanted) else { return try body() }
        throw handOff(until: wanted, view: view) { Result { try body().serialized() } }
    }

    /// A call answered by `answer` once the view has applied `wanted`, or `behind` after at most
    /// `longestWait` and the call's deadline.
    static func handOff(
        until wanted: UInt64, view: EntitlementView, _ answer: @escaping @Sendable () -> Result<[UInt8], any Error>
    ) -> RPCHandOff {
        RPCHandOff { context, responder in
            let left = Duration.nanoseconds(
                Int64(clamping: context.deadline.subtractingClamped(context.clock.nanoseconds())))
            view.whenApplied(wanted, within: min(left, longestWait), clock: context.clock) { reached in
                guard reached else { return responder.fail(behind(wanted, view: view)) }
                switch answer() {
                case .success(let bytes): responder.succeed(bytes)
                case .failure(let error): responder.fail(error)
                }
            }
        }
    }

    /// Why a read of position `wanted` is not answered: the view is not there yet.
    static func behind(_ wanted: UInt64, view: EntitlementView) -> EntitlementError {
        EntitlementError(
            .behind,
            "this instance's view has applied the ledger's changes through position \(view.position.map { "\($0)" } ?? "none (loading)"), not yet \(wanted) (min_position): it follows the ledger's change feed and is behind; retry, or ask another instance"
        )
    }

    /// What a grant rests on; with `renewal` (ListEntitlements), also the subscription's renewal
    /// details.
    static func grant(
        _ holding: Holding, capability: CapabilityID, tables: ViewTables, until: Int64?, renewal: Bool = false
    ) -> AccessGrant {
        let granting = HoldingAccess.grantingProduct(holding, capability, in: tables)
        let product = tables.products[Int(granting)]
        return AccessGrant(
            key: tables.subscriptionKey(of: holding), productID: product.productID, basePlanID: product.basePlanID,
            state: holding.subscriptionState, untilMilliseconds: until,
            renewal: renewal ? tables.renewal(of: holding, product: granting) : nil)
    }

    static func list(_ request: ListEntitlementsRequest, view: EntitlementView, policy: ProductPolicy?, now: Int64)
        throws(EntitlementError) -> ListEntitlementsResponse
    {
        try checkAccount(request.accountID.utf8.count)
        guard let policy else { return ListEntitlementsResponse() }
        let at = request.atMilliseconds ?? now
        let rules = policy.access
        let entries = view.withAccount(request.accountID, policy: policy) { tables, account in
            var entries: [CapabilityID: EntitlementEntry] = [:]
            guard let account else { return entries }
            // In key order, so that the grants listed (and which are left out past
            // `maxGrants`) do not depend on the order the view learned of them.
            var holdings: [Holding] = []
            tables.forEachHolding(of: account) { holdings.append($0) }
            holdings.sort { tables.keyPrecedes($0, $1) }
            for holding in holdings {
                for capability in HoldingAccess.capabilities(of: holding, in: tables) {
                    guard
                        case .allowed(let until)? = HoldingAccess.decision(
                            holding, capability, in: tables, rules: rules, at: at)
                    else { continue }
                    var entry =
                        entries[capability]
                        ?? EntitlementEntry(
                            capability: policy.name(of: capability), untilMilliseconds: until, grants: [])
                    if let current = entry.untilMilliseconds {
                        entry.untilMilliseconds = until.map { max($0, current) }
                    }
                    if entry.grants.count < maxGrants {
                        entry.grants.append(
                            grant(holding, capability: capability, tables: tables, until: until, renewal: true))
                    }
                    entries[capability] = entry
                }
            }
            return entries
        }
        return ListEntitlementsResponse(entitlements: entries.values.sorted { $0.capability < $1.capability })
    }

    /// The account's access at `at` to each capability its holdings' products grant, as access
    /// events announce it: allowed with its end and the subscription it rests on, or denied
    /// with why (`expired`, `revoked`, `state`); a capability nothing grants is left out.
    static func access(of account: String, view: EntitlementView, policy: ProductPolicy, at: Int64)
        -> [String: AccessEventTracker.Access]
    {
        view.withAccount(account, policy: policy) { tables, index in
            var access: [String: AccessEventTracker.Access] = [:]
            guard let index else { return access }
            var capabilities = CapabilitySet.empty
            tables.forEachHolding(of: index) {
                capabilities = capabilities.union(HoldingAccess.capabilities(of: $0, in: tables))
            }
            for capability in capabilities {
                guard
                    let (decision, holding) = AccountAccess.evaluate(
                        tables, account: index, capability: capability, rules: policy.access, at: at)
                else { continue }
                let name = policy.name(of: capability)
                switch decision {
                case .allowed(let until):
                    access[name] = .allowed(until: until, key: tables.subscriptionKey(of: holding))
                case .denied(.expired): access[name] = .denied(reason: "expired")
                case .denied(.revoked): access[name] = .denied(reason: "revoked")
                case .denied(.stateDenies): access[name] = .denied(reason: "state")
                case .denied(.noGrant), .denied(.unknownCapability): continue
                }
            }
            return access
        }
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

}
