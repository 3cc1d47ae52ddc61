/// What an account's subscriptions together mean for one capability at one instant: the one
/// access decision every answer is read from (`CheckAccess` and its batch, the access events,
/// `GetAccessTimeline`), each subscription judged by `HoldingAccess.decision` and their decisions
/// combined by `AccessDecision.outranks`.
enum AccountAccess {
    /// The union over the account's subscriptions whose products grant `capability`, with the
    /// subscription behind it (the one that gives the latest end, or the nearest miss); nil when
    /// none does.
    static func evaluate(
        _ tables: ViewTables, account: Int?, capability: CapabilityID, rules: AccessRules, at: Int64
    ) -> (decision: AccessDecision, holding: Holding)? {
        guard let account, var index = tables.firstHolding(of: account) else { return nil }
        var best: (decision: AccessDecision, holding: Holding)?
        // A loop, not `forEachHolding`: a closure that captured `tables` would copy them.
        while true {
            let holding = tables.holdings[index]
            // Of two that rank the same, the one that began first, then the one whose key comes
            // first: the answer does not depend on the order the view learned of them.
            if let decision = HoldingAccess.decision(holding, capability, in: tables, rules: rules, at: at),
                best.map({
                    decision.outranks($0.decision)
                        || (!$0.decision.outranks(decision) && tiePrecedes(holding, $0.holding, in: tables))
                }) ?? true
            {
                best = (decision, holding)
            }
            guard holding.next != 0 else { return best }
            index = Int(holding.next) - 1
        }
    }

    /// Which of two holdings whose decisions rank the same names the answer: the one whose last
    /// period (or purchase) began first, the one already running (an old plan beside a deferred
    /// replacement that has not started), then the key that comes first. Store facts only, so
    /// the answer does not depend on the order the view learned of either.
    static func tiePrecedes(_ a: Holding, _ b: Holding, in tables: ViewTables) -> Bool {
        let first = Holding.time(a.purchase) ?? Int64.max
        let second = Holding.time(b.purchase) ?? Int64.max
        if first != second { return first < second }
        return tables.keyPrecedes(a, b)
    }
}
