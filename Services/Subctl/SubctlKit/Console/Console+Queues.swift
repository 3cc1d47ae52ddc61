import HTTP
import Model
import Wire

/// `/queues`: what waits for support. Store notifications that failed or were rejected (the
/// ledger's ListInbox, as `subctl inbox`), Google Play purchases not acknowledged yet (the
/// ledger's ListSubscriptions), and webhook dead letters (ListDeadLetters, as `subctl events dead`).
extension Console {
    /// How many entries each queue shows.
    static let queuePageSize: UInt32 = 200

    func queues(session: String) async -> HTTPResponse {
        let csrf = sessions.csrfToken(for: session)
        let here = "/queues"
        var content: [HTML] = [.element("h1", text: "Work queues")]
        content.append(await failedNotifications(csrf: csrf, returnTo: here))
        content.append(await acknowledgementsOwed(csrf: csrf, returnTo: here))
        content.append(await deadLetters(csrf: csrf, returnTo: here))
        return page("Work queues", session: session, content)
    }

    private func failedNotifications(csrf: String, returnTo: String) async -> HTML {
        var entries: [InboxEntry] = []
        do throws(SubctlError) {
            for status in [InboxStatus.failed, .rejected] {
                entries += try await call(
                    services.ledger, LedgerCommand.inbox(status: status, store: nil, pageSize: 0).method,
                    ListInboxRequest(status: status, pageSize: Self.queuePageSize), as: ListInboxResponse.self
                ).entries
            }
        } catch {
            return Self.section(
                "failed-notifications", "Failed notifications", [Self.sectionAlert(Self.describe(error))])
        }
        let holders = await holders(of: entries.compactMap(\.key))
        let rows: [HTML] = entries.map { entry in
            var actions: [HTML] = []
            if !readOnly, entry.status == .failed, let store = entry.store {
                actions.append(
                    actionForm(
                        .replayInbox, csrf: csrf, returnTo: returnTo,
                        hidden: ["store": store.description, "notification_id": entry.notificationID], inputs: []))
            }
            if !readOnly, let key = entry.key, key.store != .promotional {
                actions.append(
                    actionForm(.refresh, csrf: csrf, returnTo: returnTo, hidden: ["key": key.description], inputs: []))
            }
            return .element(
                "tr", ["class": "inbox-entry"],
                [
                    Self.cell(Self.storeName(entry.store)),
                    Self.cell(entry.notificationType + (entry.subtype.map { " / \($0)" } ?? "")),
                    Self.cell(entry.notificationID, class: "key"),
                    Self.cell(entry.status.map { "\($0)" } ?? "-"),
                    Self.cell("\(entry.attempts)"),
                    Self.cell(Self.time(entry.receivedTimeMilliseconds)),
                    Self.cell(entry.lastError ?? "-"),
                    .element(
                        "td", [Self.subscriptionLink(entry.key, account: entry.key.flatMap { holders[$0.description] })]
                    ),
                    .element("td", ["class": "actions"], actions),
                ])
        }
        return Self.section(
            "failed-notifications", "Failed notifications",
            [
                Self.table(
                    "failed-notifications-table",
                    caption: "Store notifications that failed (the store's API or the ledger's write) or were refused",
                    headers: [
                        "Store", "Type", "Notification", "Status", "Attempts", "Received", "Error", "Subject",
                        "Actions",
                    ],
                    rows: rows)
            ] + (rows.isEmpty ? [.element("p", text: "None.")] : []))
    }

    /// How many subscriptions of the failed notifications have their account looked up.
    static let holderLookups = 50

    /// The account that holds each subscription of `keys` (the first `holderLookups` distinct
    /// ones), by key; a key the ledger does not hold, or holds for no account, is left out.
    private func holders(of keys: [SubscriptionKey]) async -> [String: String] {
        var distinct: [SubscriptionKey] = []
        var seen: Set<String> = []
        for key in keys where key.store != .promotional && seen.insert(key.description).inserted {
            distinct.append(key)
        }
        return await withTaskGroup(of: (String, String?).self) { group in
            for key in distinct.prefix(Self.holderLookups) {
                group.addTask {
                    let answer = try? await self.call(
                        self.services.ledger, LedgerRPC.getSubscription.name,
                        GetSubscriptionRequest(key: key, stateOnly: true), as: GetSubscriptionResponse.self)
                    return (key.description, answer?.subscription?.accountID.flatMap { $0.isEmpty ? nil : $0 })
                }
            }
            var holders: [String: String] = [:]
            for await (key, account) in group { holders[key] = account }
            return holders
        }
    }

    /// The Google Play purchases the ledger has not acknowledged: every page of Google
    /// subscriptions, keeping those not acknowledged.
    func unacknowledgedGooglePurchases() async throws(SubctlError) -> [Subscription] {
        // The ledger's own filter: Google purchases recorded, not acknowledged, not ended or pending.
        let request = ListSubscriptionsRequest(store: .google, pageSize: Self.queuePageSize, unacknowledged: true)
        return try await call(
            services.ledger, LedgerRPC.listSubscriptions.name, request, as: ListSubscriptionsResponse.self
        ).subscriptions
    }

    private func acknowledgementsOwed(csrf: String, returnTo: String) async -> HTML {
        let owed: [Subscription]
        do throws(SubctlError) {
            owed = try await unacknowledgedGooglePurchases()
        } catch {
            return Self.section("acks-owed", "Acknowledgements owed", [Self.sectionAlert(Self.describe(error))])
        }
        let rows: [HTML] = owed.map { subscription in
            .element(
                "tr", ["class": "ack-owed"],
                [
                    Self.cell(subscription.productID, class: "product"),
                    Self.cell(Self.stateName(subscription.state)),
                    Self.cell(subscription.key.storeID, class: "key"),
                    Self.cell(Self.time(subscription.purchaseTimeMilliseconds)),
                    Self.cell(Self.time(subscription.purchaseTimeMilliseconds.map { $0 + Self.acknowledgementWindow })),
                    .element("td", [Self.subscriptionLink(subscription.key, account: subscription.accountID)]),
                    .element(
                        "td", ["class": "actions"], readOnly ? [] : acknowledgementActions(subscription, csrf, returnTo)
                    ),
                ])
        }
        return Self.section(
            "acks-owed", "Acknowledgements owed",
            [
                Self.table(
                    "acks-owed-table",
                    caption: "Google Play purchases not acknowledged yet (Play refunds them after three days)",
                    headers: [
                        "Product", "State", "Purchase token", "Bought", "Refunded by Play after", "Account", "Actions",
                    ],
                    rows: rows)
            ] + (rows.isEmpty ? [.element("p", text: "None.")] : []))
    }

    /// Play refunds and revokes a purchase not acknowledged within three days of it.
    static let acknowledgementWindow: Int64 = 3 * 86_400_000

    /// What acknowledges an owed purchase: a refresh by an operator once an account holds it;
    /// before that, restoring it to the customer's account (the verifier acknowledges it then).
    private func acknowledgementActions(_ subscription: Subscription, _ csrf: String, _ returnTo: String) -> [HTML] {
        guard subscription.accountID?.isEmpty ?? true else {
            return [
                actionForm(
                    .refresh, csrf: csrf, returnTo: returnTo, hidden: ["key": subscription.key.description], inputs: [])
            ]
        }
        return [
            .element("p", text: "No account holds it: an acknowledgement waits for it to be linked."),
            restoreForm(subscription, csrf: csrf, returnTo: returnTo),
        ].compactMap { $0 }
    }

    private func deadLetters(csrf: String, returnTo: String) async -> HTML {
        let letters: [DeadLetter]
        do throws(SubctlError) {
            letters = try await call(
                services.ledger, LedgerCommand.deadLetters(endpoint: nil, limit: 0, all: false).method,
                ListDeadLettersRequest(limit: Self.queuePageSize), as: ListDeadLettersResponse.self
            ).deadLetters
        } catch {
            return Self.section("dead-letters", "Webhook dead letters", [Self.sectionAlert(Self.describe(error))])
        }
        let rows: [HTML] = letters.map { letter in
            let attempt = letter.attempt
            let event = attempt?.event
            var actions: [HTML] = []
            if !readOnly, let attempt {
                actions.append(
                    actionForm(
                        .redeliverWebhook, csrf: csrf, returnTo: returnTo,
                        hidden: ["endpoint": letter.endpoint, "sequence": String(attempt.sequence)], inputs: []))
            }
            return .element(
                "tr", ["class": "dead-letter"],
                [
                    Self.cell(letter.endpoint),
                    Self.cell(attempt.map { String($0.sequence) } ?? "-"),
                    Self.cell(event?.type ?? "-"),
                    Self.cell(attempt.map { "\($0.attempts) attempts, last status \($0.lastStatus)" } ?? "-"),
                    Self.cell(attempt?.lastError ?? "-"),
                    Self.cell(Self.time(attempt?.deadMilliseconds)),
                    .element("td", [Self.subscriptionLink(event?.key, account: event?.accountID)]),
                    .element("td", ["class": "actions"], actions),
                ])
        }
        return Self.section(
            "dead-letters", "Webhook dead letters",
            [
                Self.table(
                    "dead-letters-table", caption: "Webhook events delivery gave up on",
                    headers: ["Endpoint", "Sequence", "Event", "Attempts", "Error", "Given up", "Account", "Actions"],
                    rows: rows)
            ] + (rows.isEmpty ? [.element("p", text: "None.")] : []))
    }

    /// The account's page when the account is known, else a search for the subscription's store id.
    static func subscriptionLink(_ key: SubscriptionKey?, account: String?) -> HTML {
        if let account, !account.isEmpty {
            return .element("a", ["class": "account-link", "href": accountPath(account)], text: account)
        }
        guard let key, !key.storeID.isEmpty else { return .text("-") }
        // A purchase token runs to 150 characters: its end is enough to tell it from others.
        let shown = key.storeID.count > 24 ? "…" + key.storeID.suffix(16) : key.storeID
        return .element(
            "a", ["class": "find-link", "href": FormFields.link("/find", ["q": key.storeID]), "title": key.storeID],
            text: "find \(shown)")
    }
}
