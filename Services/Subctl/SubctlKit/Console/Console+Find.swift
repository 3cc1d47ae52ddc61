import HTTP
import Model
import Wire

/// `/` and `/find`: what a value a customer quotes names, as `subctl find` asks the verifier.
extension Console {
    func home(session: String) -> HTTPResponse {
        page(
            "Find", session: session,
            [
                .element("h1", text: "Find a customer"),
                findForm(value: ""),
                .element("h2", ["id": "recent-heading"], text: "Recent searches"),
                .element(
                    "ul", ["id": "recent", "aria-labelledby": "recent-heading"],
                    sessions.recent(for: session).map { value in
                        .element("li", [.element("a", ["href": FormFields.link("/find", ["q": value])], text: value)])
                    }),
            ])
    }

    private func findForm(value: String) -> HTML {
        .element(
            "form", ["id": "find-form", "method": "get", "action": "/find", "role": "search"],
            [
                .element("label", ["for": "q"], text: "Account id, transaction, order id or purchase token"),
                .void("input", ["id": "q", "name": "q", "type": "search", "required": "", "value": value]),
                .element("button", ["type": "submit"], text: "Find"),
            ])
    }

    func find(_ value: String, session: String) async -> HTTPResponse {
        let value = value.trimmed
        guard !value.isEmpty else { return home(session: session) }
        sessions.remember(search: value, for: session)
        var content: [HTML] = [.element("h1", text: "Find"), findForm(value: value)]
        let found: FindResponse
        do throws(SubctlError) {
            found = try await call(
                services.verifier, FindCommand.method, FindRequest(value: value, reason: "support console"),
                as: FindResponse.self)
        } catch {
            guard error.code == .rpc(.notFound) else {
                return page("Find", session: session, content + [Self.alert(Self.describe(error))], status: 502)
            }
            content.append(.element("p", ["id": "not-found"], text: "Nothing found: \(error.message)"))
            return page("Find", session: session, content, status: 404)
        }
        content.append(
            .element(
                "p", ["id": "taken-as"],
                text: "“\(value)” was taken as \(found.takenAs.map(Self.words) ?? "nothing in particular")."))
        var items: [HTML] = found.accountIDs.map { account in
            .element(
                "li",
                [
                    .text("Account "),
                    .element("a", ["class": "account-link", "href": Self.accountPath(account)], text: account),
                ])
        }
        for match in found.subscriptions {
            guard let subscription = match.subscription else { continue }
            var parts: [HTML] = [
                .text(
                    "\(Self.storeName(subscription.key.store)) \(subscription.productID) \(Self.stateName(subscription.state)), "
                        + "key \(subscription.key.storeID), matched as \(match.matched.map(Self.words) ?? "-")")
            ]
            if let account = subscription.accountID, !account.isEmpty {
                parts += [
                    .text(", account "),
                    .element("a", ["class": "account-link", "href": Self.accountPath(account)], text: account),
                ]
            }
            if subscription.accountID?.isEmpty ?? true,
                let form = restoreForm(
                    subscription, csrf: sessions.csrfToken(for: session),
                    returnTo: FormFields.link("/find", ["q": value]))
            {
                parts += [.text(" — no account holds it: restore it to the customer's account "), form]
            }
            items.append(.element("li", ["class": "subscription-match"], parts))
        }
        items += found.unrecordedOriginalTransactionIDs.map { id in
            .element(
                "li",
                text: "App Store purchase \(id): not in the ledger (restore or verify it to record it)")
        }
        content.append(.element("ul", ["id": "results", "aria-label": "Results"], items))
        return page("Find", session: session, content)
    }

    /// `/account/<percent-encoded id>`.
    static func accountPath(_ account: String) -> String { "/account/" + FormFields.percentEncoded(account) }

    /// What a value was found as, in words.
    static func words(_ match: FindMatch) -> String {
        switch match {
        case .accountID: "account id"
        case .appleOriginalTransactionID: "Apple original transaction id"
        case .appleTransactionID: "Apple transaction id"
        case .appleOrderID: "Apple order id"
        case .googlePurchaseToken: "Google purchase token"
        case .googleOrderID: "Google order id"
        case .grantID: "grant id"
        case .unknown(let number): "match \(number)"
        }
    }

    static func storeName(_ store: Store?) -> String {
        switch store {
        case .apple?: "App Store"
        case .google?: "Google Play"
        case .promotional?: "Grant"
        case nil: "-"
        }
    }

    static func stateName(_ state: SubscriptionState?) -> String { state?.description ?? "-" }
}

extension String {
    /// Without white space at either end.
    var trimmed: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(self[first...last])
    }
}
