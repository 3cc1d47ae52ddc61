import HTTP
import Model
import Wire

/// `/account/ID[?at=YYYY-MM-DDTHH:MM]`: an account's subscriptions and grants (the ledger's
/// GetAccount, as `subctl account`), its access over time (the entitlement service's
/// GetAccessTimeline, as `subctl access timeline`) and at an instant (CheckAccess), and its audit
/// trail (GetHistory, as `subctl history --account`).
extension Console {
    /// How many of the newest events the history shows.
    static let historyPageSize: UInt32 = 200
    /// How far after now the timeline reaches at least.
    static let timelineFuture: Int64 = 31 * 86_400_000
    /// How far the timeline reaches past the latest expiry or renewal date it would otherwise hide.
    static let timelineMargin: Int64 = 7 * 86_400_000
    /// How many of the account's subscriptions have their own history read into the account's.
    static let historySubscriptions = 20

    /// Now as the services decide it: the ledger's `server_time_ms` (a sandbox's services run on
    /// the store simulator's clock, and an operator's machine may be off), or this machine's time
    /// when the ledger does not say.
    func servicesNow() async -> Int64 {
        do throws(SubctlError) {
            let health = try await call(
                services.ledger, LedgerRPC.health.name, HealthRequest(), as: HealthResponse.self)
            return health.serverTimeMilliseconds > 0 ? health.serverTimeMilliseconds : now()
        } catch {
            return now()
        }
    }

    func account(_ accountID: String, at: String?, session: String) async -> HTTPResponse {
        let here = Self.accountPath(accountID)
        var instant: Int64?
        if let at, !at.isEmpty {
            guard let parsed = Self.instant(at) else {
                return errorPage(
                    "Account", "at expects a UTC time YYYY-MM-DDTHH:MM, got “\(at)”", session: session, status: 400)
            }
            instant = parsed
        }
        let account: GetAccountResponse
        let history: GetHistoryResponse
        do throws(SubctlError) {
            account = try await call(
                services.ledger, LedgerCommand.account(accountID).method, GetAccountRequest(accountID: accountID),
                as: GetAccountResponse.self)
            history = try await call(
                services.ledger, LedgerCommand.history(.account(accountID), pageSize: 0, all: false).method,
                GetHistoryRequest(accountID: accountID, pageSize: Self.historyPageSize), as: GetHistoryResponse.self)
        } catch {
            return errorPage(
                "Account \(accountID)", Self.describe(error), session: session,
                status: error.code == .rpc(.notFound) ? 404 : 502)
        }
        let keyHistories = await subscriptionHistories(account.subscriptions)
        let now = await servicesNow()
        let firstStart = account.subscriptions.flatMap { subscription in
            subscription.periods.map(\.startMilliseconds)
                + [subscription.originalPurchaseTimeMilliseconds, subscription.purchaseTimeMilliseconds].compactMap {
                    $0
                }
        }.filter { $0 > 0 }.min()
        var from = firstStart ?? now - AccessCommand.defaultPast
        var to = Self.timelineEnd(now: now, account.subscriptions)
        if let instant {
            from = min(from, instant)
            to = max(to, instant + 86_400_000)
        }
        let csrf = sessions.csrfToken(for: session)
        var content: [HTML] = [.element("h1", text: accountID)]
        content.append(subscriptionsTable(account.subscriptions, now: now, csrf: csrf, returnTo: here))
        content.append(await timeline(accountID, from: from, to: to, now: now, instant: instant, here: here))
        content.append(pending(account.subscriptions))
        content.append(links(account.links, history.events))
        content.append(grants(accountID, account.subscriptions, now: now, csrf: csrf, returnTo: here))
        content.append(historyTable(accountID, history, keyHistories, subscriptions: account.subscriptions))
        return page("Account \(accountID)", session: session, content)
    }

    /// `YYYY-MM-DDTHH:MM` (a `datetime-local` value), seconds optional, as UTC epoch milliseconds.
    static func instant(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        switch bytes.count {
        case 16: return AccessCommand.instant(text + ":00Z")
        case 19: return AccessCommand.instant(text + "Z")
        default: return nil
        }
    }

    /// A `datetime-local` value for an instant: `2026-01-31T12:00`.
    static func pickerValue(_ milliseconds: Int64) -> String { String(time(milliseconds).prefix(16)) }

    /// A subscription's state as support reads it: a grant the ledger still calls active whose end
    /// has passed is `ended` (nothing is recorded when a grant runs out).
    static func shownState(_ subscription: Subscription, now: Int64) -> String {
        if subscription.key.store == .promotional, subscription.state == .active,
            let end = subscription.expiresTimeMilliseconds, end <= now
        {
            return "ended"
        }
        return stateName(subscription.state)
    }

    private func subscriptionsTable(_ subscriptions: [Subscription], now: Int64, csrf: String, returnTo: String)
        -> HTML
    {
        let rows: [HTML] = subscriptions.map { subscription in
            var cells: [HTML] = [
                Self.cell(Self.storeName(subscription.key.store)),
                Self.cell(subscription.productID, class: "product"),
                Self.cell(Self.shownState(subscription, now: now), class: "state"),
                Self.cell(subscription.key.storeID, class: "key"),
                Self.cell(Self.renewal(subscription)),
            ]
            cells.append(.element("td", Self.managementLink(subscription).map { [$0] } ?? [.text("-")]))
            cells.append(
                .element("td", ["class": "actions"], readOnly ? [] : actionForms(subscription, csrf, returnTo)))
            return .element(
                "tr", ["class": "subscription", "data-key": subscription.key.description], cells)
        }
        return Self.section(
            "subscriptions-section", "Subscriptions",
            [
                Self.table(
                    "subscriptions", caption: "Subscriptions and grants of both stores, as the ledger records them",
                    headers: ["Store", "Product", "State", "Store id", "Renewal", "Manage", "Actions"], rows: rows)
            ])
    }

    /// Auto-renew, next renewal, pending product, grace and retry, in a line.
    static func renewal(_ subscription: Subscription) -> String {
        if subscription.state == .revoked {
            return "revoked" + (subscription.revokedTimeMilliseconds.map { " at \(time($0))" } ?? "")
                + (subscription.revocationReason.map { " (\($0))" } ?? "")
        }
        var parts = ["auto-renew \(subscription.autoRenew ? "on" : "off")"]
        if let renewal = subscription.renewalTimeMilliseconds
            ?? (subscription.autoRenew ? subscription.expiresTimeMilliseconds : nil)
        {
            parts.append("next renewal \(time(renewal))")
        } else if let expires = subscription.expiresTimeMilliseconds {
            parts.append("ends \(time(expires))")
        }
        if let next = subscription.autoRenewProductID, next != subscription.productID {
            parts.append("renews as \(next)")
        }
        if let grace = subscription.graceExpiresTimeMilliseconds { parts.append("grace until \(time(grace))") }
        if subscription.inBillingRetry { parts.append("in billing retry") }
        return parts.joined(separator: "; ")
    }

    /// Where the customer manages the subscription in the store; nil for a grant.
    static func managementLink(_ subscription: Subscription) -> HTML? {
        switch subscription.key.store {
        case .apple:
            return .element(
                "a", ["href": "https://apps.apple.com/account/subscriptions", "rel": "noreferrer"],
                text: "App Store subscriptions")
        case .google:
            let url = FormFields.link(
                "https://play.google.com/store/account/subscriptions",
                ["sku": subscription.productID, "package": subscription.bundleOrPackage])
            return .element("a", ["href": url, "rel": "noreferrer"], text: "Google Play subscriptions")
        case .promotional:
            return nil
        }
    }

    /// The timeline's end: 31 days after now, or 7 days after the latest expiry, grace expiry or
    /// renewal date of the account's subscriptions and grants when that is later (an extension
    /// or a yearly renewal stays in sight).
    static func timelineEnd(now: Int64, _ subscriptions: [Subscription]) -> Int64 {
        let latest = subscriptions.flatMap { subscription in
            [
                subscription.expiresTimeMilliseconds, subscription.renewalTimeMilliseconds,
                subscription.graceExpiresTimeMilliseconds,
            ].compactMap { $0 }
        }.max()
        return max(now + timelineFuture, latest.map { $0 + timelineMargin } ?? .min)
    }

    private func timeline(
        _ accountID: String, from: Int64, to: Int64, now: Int64, instant: Int64?, here: String
    ) async -> HTML {
        var content: [HTML] = []
        let answer: GetAccessTimelineResponse
        do throws(SubctlError) {
            answer = try await call(
                services.entitlement,
                AccessCommand.timeline(account: accountID, capability: nil, from: from, to: to).method,
                GetAccessTimelineRequest(accountID: accountID, fromMilliseconds: from, toMilliseconds: to),
                as: GetAccessTimelineResponse.self)
        } catch {
            return Self.section("timeline", "Access over time", [Self.sectionAlert(Self.describe(error))])
        }
        content.append(
            .element(
                "p", ["class": "legend"],
                text: "From \(Self.time(from)) to \(Self.time(to)); the line marks now (\(Self.time(now)))"
                    + (instant.map { ", the dashed line the instant picked (\(Self.time($0)))" } ?? "")
                    + ". After now, what holds if nothing more happens: a renewal the store has not made yet is "
                    + "not counted.")
        )
        if answer.capabilities.isEmpty {
            content.append(.element("p", text: "Nothing gives this account any capability."))
        }
        for capability in answer.capabilities {
            content.append(Self.capabilityTimeline(capability, from: from, to: to, now: now, instant: instant))
        }
        content.append(
            .element(
                "form", ["id": "instant", "method": "get", "action": here],
                [
                    .element("label", ["for": "at"], text: "Access at (UTC)"),
                    .void(
                        "input",
                        ["id": "at", "name": "at", "type": "datetime-local", "value": instant.map(Self.pickerValue)]),
                    .element("button", ["type": "submit"], text: "Show access"),
                ]))
        if let instant {
            content.append(await accessAt(accountID, answer.capabilities.map(\.capability), at: instant))
        }
        return Self.section("timeline", "Access over time", content)
    }

    /// One capability's intervals as an SVG strip, with a text alternative for each.
    static func capabilityTimeline(
        _ timeline: CapabilityTimeline, from: Int64, to: Int64, now: Int64, instant: Int64? = nil
    ) -> HTML {
        let span = Double(max(to - from, 1))
        func x(_ instant: Int64) -> Double { Double(min(max(instant, from), to) - from) / span * 1000 }
        func number(_ value: Double) -> String { String((value * 100).rounded() / 100) }
        var shapes: [HTML] = []
        // Drawn after the others, so that the interval after a short one does not cover it.
        var shortShapes: [HTML] = []
        var descriptions: [HTML] = []
        for interval in timeline.intervals {
            let kind = kindName(interval.kind)
            let text = "\(kind) from \(time(interval.startMilliseconds)) to \(time(interval.endMilliseconds))"
            let left = x(interval.startMilliseconds)
            let width = Self.drawnWidth(left, x(interval.endMilliseconds), kind: kind)
            let shape = HTML.element(
                "rect",
                [
                    "class": "interval kind-\(kind)", "x": number(left), "y": "0", "width": number(width),
                    "height": "40",
                ], [.element("title", text: text)])
            if width > x(interval.endMilliseconds) - left {
                shortShapes.append(shape)
            } else {
                shapes.append(shape)
            }
            descriptions.append(.element("li", ["class": "interval-text"], text: text))
        }
        shapes += shortShapes
        let nowX = number(x(now))
        // An end tag for each: inside SVG a `<line>` without one holds what follows.
        shapes.append(.element("line", ["class": "now-line", "x1": nowX, "x2": nowX, "y1": "0", "y2": "40"], []))
        if let instant {
            let instantX = number(x(instant))
            shapes.append(
                .element("line", ["class": "instant-line", "x1": instantX, "x2": instantX, "y1": "0", "y2": "40"], []))
        }
        var content: [HTML] = [
            .element("h3", text: timeline.capability),
            .element(
                "svg",
                [
                    "xmlns": "http://www.w3.org/2000/svg", "viewBox": "0 0 1000 40", "preserveAspectRatio": "none",
                    "aria-hidden": "true", "data-from-ms": String(from), "data-to-ms": String(to),
                ], shapes),
            .element("ul", ["class": "visually-hidden"], descriptions),
        ]
        // A key to the colours, for the kinds drawn (the list above says the same in words).
        var kinds: [String] = []
        for interval in timeline.intervals where !kinds.contains(kindName(interval.kind)) {
            kinds.append(kindName(interval.kind))
        }
        content.append(
            .element(
                "ul", ["class": "timeline-key", "aria-hidden": "true"],
                kinds.map { kind in
                    .element(
                        "li",
                        [
                            .element(
                                "svg", ["class": "swatch", "viewBox": "0 0 10 10"],
                                [.element("rect", ["class": "kind-\(kind)", "width": "10", "height": "10"], [])]),
                            .text(" " + kind),
                        ])
                }))
        if timeline.truncated {
            content.append(.element("p", text: "More intervals than shown: narrow the span."))
        }
        return .element("section", ["class": "capability", "data-capability": timeline.capability], content)
    }

    /// An interval's width on the 1,000-wide strip: at least 2 (a fifth of a percent) for one
    /// that gives or takes access, so a grant of minutes on a timeline of months still shows.
    static func drawnWidth(_ left: Double, _ right: Double, kind: String) -> Double {
        let width = max(right - left, 0)
        return kind == "gap" ? width : max(width, 2)
    }

    /// A timeline kind as the page's classes name it: `paid`, `billing-retry`, `hold`, ….
    static func kindName(_ kind: TimelineKind?) -> String {
        switch kind {
        case .paid?: "paid"
        case .trial?: "trial"
        case .offer?: "offer"
        case .grace?: "grace"
        case .billingRetry?: "billing-retry"
        case .accountHold?: "hold"
        case .paused?: "paused"
        case .revoked?: "revoked"
        case .granted?: "granted"
        case .gap?: "gap"
        case .pending?: "pending"
        case .otherAllowed?: "other-allowed"
        case .unknown?, nil: "gap"
        }
    }

    /// CheckAccess for each capability as of `at`.
    private func accessAt(_ accountID: String, _ capabilities: [String], at: Int64) async -> HTML {
        var items: [HTML] = []
        for capability in capabilities {
            let text: String
            do throws(SubctlError) {
                let answer = try await call(
                    services.entitlement, EntitlementRPC.checkAccess.name,
                    CheckAccessRequest(accountID: accountID, capability: capability, atMilliseconds: at),
                    as: CheckAccessResponse.self)
                text = Self.accessText(capability, answer)
            } catch {
                text = "\(capability): \(Self.describe(error))"
            }
            items.append(.element("li", ["data-capability": capability], text: text))
        }
        return .element(
            "ul", ["id": "access-at", "role": "status", "aria-label": "Access at \(Self.time(at))"], items)
    }

    /// A CheckAccess answer in a line: granted until when or not granted and why, then what the
    /// answer rests on (the subscription or grant and its product) and the entitlement service's
    /// detail. `pro: granted until 2026-03-08T20:00:00Z; rests on apple/production/2000000001
    /// (pro.monthly, active)`, `pro: not granted (no grant)`.
    static func accessText(_ capability: String, _ answer: CheckAccessResponse) -> String {
        let reason = String(OutputText.reason(answer.reason).map { $0 == "_" ? " " : $0 })
        var text: String
        if answer.allowed {
            text = "\(capability): granted until \(answer.untilMilliseconds.map(Self.time) ?? "no end")"
            if let other = answer.reason, other != .granted { text += " (\(reason))" }
        } else {
            text = "\(capability): not granted (\(reason))"
        }
        if let grant = answer.grant {
            var about = [grant.productID].filter { !$0.isEmpty }
            if let state = grant.state { about.append("now \(Self.stateName(state))") }
            text += "; rests on \(grant.key.map { "\($0)" } ?? "an unnamed subscription")"
            if !about.isEmpty { text += " (\(about.joined(separator: ", ")))" }
        }
        if let detail = answer.detail, !detail.isEmpty { text += "; \(detail)" }
        return text
    }

    private func pending(_ subscriptions: [Subscription]) -> HTML {
        let items: [HTML] = subscriptions.compactMap { subscription in
            guard let next = subscription.autoRenewProductID, next != subscription.productID else { return nil }
            return .element(
                "li",
                text:
                    "\(Self.storeName(subscription.key.store)) \(subscription.key.storeID): \(subscription.productID) "
                    + "becomes \(next) at the next renewal (\(Self.time(subscription.renewalTimeMilliseconds ?? subscription.expiresTimeMilliseconds)))"
            )
        }
        return Self.section(
            "pending", "Pending plan changes",
            items.isEmpty ? [.element("p", text: "None.")] : [.element("ul", items)])
    }

    /// The store purchases linked to the account (grants are the account's own, listed under
    /// Support grants), then the transfers and merges the history shows.
    private func links(_ links: [AccountLink], _ events: [LifecycleEvent]) -> HTML {
        var items: [HTML] = links.filter { $0.key.store != .promotional }.map { link in
            .element("li", text: "linked \(link.key) at \(Self.time(link.linkedTimeMilliseconds))")
        }
        for event in events {
            let verb: String
            switch event.kind {
            case .accountTransferred?: verb = "transferred"
            case .accountMerged?: verb = "merged"
            default: continue
            }
            var text = "\(verb) \(event.key == .accountEvents ? "account" : event.key.description)"
            if let account = event.accountID { text += " to \(account)" }
            if let other = event.otherAccountID { text += " (other account \(other))" }
            items.append(.element("li", text: text + " at \(Self.time(event.storeTimeMilliseconds))"))
        }
        return Self.section(
            "links", "Links and transfers",
            items.isEmpty ? [.element("p", text: "None.")] : [.element("ul", items)])
    }

    private func grants(
        _ accountID: String, _ subscriptions: [Subscription], now: Int64, csrf: String, returnTo: String
    ) -> HTML {
        let grants = subscriptions.filter { $0.key.store == .promotional }
        var content: [HTML] = []
        if grants.isEmpty { content.append(.element("p", text: "No support grants.")) }
        let items: [HTML] = grants.map { grant in
            var parts: [HTML] = [
                .text(
                    "\(grant.productID) from \(Self.time(grant.purchaseTimeMilliseconds)) until "
                        + "\(grant.expiresTimeMilliseconds.map(Self.time) ?? "revoked") (\(Self.shownState(grant, now: now))), "
                        + "grant \(grant.key.storeID)")
            ]
            if !readOnly, grant.state != .revoked, grant.state != .expired, Self.shownState(grant, now: now) != "ended"
            {
                parts.append(
                    actionForm(
                        .revokeGrant, csrf: csrf, returnTo: returnTo, hidden: ["grant_id": grant.key.storeID],
                        inputs: []))
            }
            return .element("li", ["class": "grant"], parts)
        }
        if !items.isEmpty { content.append(.element("ul", items)) }
        if !readOnly {
            content.append(
                actionForm(
                    .grant, csrf: csrf, returnTo: returnTo, hidden: ["account": accountID],
                    inputs: ConsoleAction.grantInputs))
        }
        return Self.section("grants", "Support grants", content)
    }

    /// One subscription's history as the page read it: the first page of `GetHistory(key)`, or
    /// why it could not be read.
    struct KeyHistory {
        var key: SubscriptionKey
        var answer: Result<GetHistoryResponse, SubctlError>
    }

    /// An event of the page's history and where it was read: `key` nil for the account's history,
    /// else that subscription's; `index` counts the events before it at its position in that
    /// answer (what `/payload` looks it up by).
    struct HistoryRow {
        var event: LifecycleEvent
        var key: SubscriptionKey?
        var index: Int
    }

    /// The first history page of each of the account's subscriptions (at most
    /// `historySubscriptions`): the ledger keeps what happened before a subscription was linked
    /// (its purchase, its first refresh) under the subscription's key only.
    private func subscriptionHistories(_ subscriptions: [Subscription]) async -> [KeyHistory] {
        // Read at once rather than one after another: the page waits for the slowest, not the sum.
        let keys = subscriptions.prefix(Self.historySubscriptions).map(\.key)
        return await withTaskGroup(of: (Int, KeyHistory).self) { group in
            for (index, key) in keys.enumerated() {
                group.addTask {
                    do throws(SubctlError) {
                        let answer = try await self.call(
                            self.services.ledger, LedgerCommand.history(.key(key), pageSize: 0, all: false).method,
                            GetHistoryRequest(key: key, pageSize: Self.historyPageSize), as: GetHistoryResponse.self)
                        return (index, KeyHistory(key: key, answer: .success(answer)))
                    } catch {
                        return (index, KeyHistory(key: key, answer: .failure(error)))
                    }
                }
            }
            var histories: [(Int, KeyHistory)] = []
            for await history in group { histories.append(history) }
            return histories.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// The account's history and its subscriptions' in one list, newest first by position, in
    /// the order each answer gave within a position (the account's first); an event both hold
    /// (same position, key, kind, store type and notification) is kept once, as the account's.
    static func mergedHistory(_ account: [LifecycleEvent], _ subscriptions: [(SubscriptionKey, [LifecycleEvent])])
        -> [HistoryRow]
    {
        struct Identity: Hashable {
            var position: UInt64?
            var key: String
            var kind: String?
            var storeType: String?
            var notificationID: String?
        }
        var seen: Set<Identity> = []
        var rows: [(row: HistoryRow, answer: Int, offset: Int)] = []
        let answers = [(nil, account)] + subscriptions.map { ($0.0 as SubscriptionKey?, $0.1) }
        for (answer, (key, events)) in answers.enumerated() {
            var atPosition: [UInt64: Int] = [:]
            for (offset, event) in events.enumerated() {
                var index = 0
                if let position = event.position {
                    index = atPosition[position, default: 0]
                    atPosition[position] = index + 1
                }
                let identity = Identity(
                    position: event.position, key: event.key.description, kind: event.kind?.description,
                    storeType: event.storeType, notificationID: event.notificationID)
                guard seen.insert(identity).inserted else { continue }
                rows.append((HistoryRow(event: event, key: key, index: index), answer, offset))
            }
        }
        rows.sort { left, right in
            let (a, b) = (left.row.event.position ?? 0, right.row.event.position ?? 0)
            if a != b { return a > b }
            return (left.answer, left.offset) < (right.answer, right.offset)
        }
        return rows.map(\.row)
    }

    /// What a history row is about, in a few words: `App Store pro.monthly`, `Google Play
    /// pro_sub`, `Grant pro`, or `account` for the account's own events (a merge, a deletion);
    /// the store id is the cell's title.
    static func subject(_ key: SubscriptionKey, product: String?) -> String {
        if key == .accountEvents { return "account" }
        let store = storeName(key.store)
        guard let product, !product.isEmpty else { return "\(store) …\(key.storeID.suffix(6))" }
        return "\(store) \(product)"
    }

    private func historyTable(
        _ accountID: String, _ history: GetHistoryResponse, _ keyHistories: [KeyHistory],
        subscriptions: [Subscription]
    ) -> HTML {
        let read = keyHistories.compactMap { history in (try? history.answer.get()).map { (history.key, $0) } }
        let merged = Self.mergedHistory(history.events, read.map { ($0.0, $0.1.events) })
        let products = Dictionary(
            subscriptions.map { ($0.key.description, $0.productID) }, uniquingKeysWith: { first, _ in first })
        let rows: [HTML] = merged.map { row in
            let event = row.event
            let hasRaw = [event.rawPayload, event.rawTransaction, event.rawRenewalInfo].contains { !($0 ?? "").isEmpty }
            var payload: HTML = .text("-")
            if !readOnly, hasRaw, let position = event.position {
                payload = .element(
                    "a",
                    [
                        "class": "payload",
                        "href": FormFields.link(
                            "/payload",
                            [
                                "account": accountID, "key": row.key?.description, "position": String(position),
                                "index": String(row.index),
                            ]),
                    ], text: "payload")
            }
            return .element(
                "tr", ["class": "event"],
                [
                    Self.cell(event.kind?.description ?? "-", class: "kind"),
                    .element(
                        "td", ["class": "of", "title": event.key.description],
                        text: Self.subject(event.key, product: products[event.key.description])),
                    .element(
                        "td", ["class": "store-type"],
                        [
                            .element("div", text: event.storeType ?? "-"),
                            .element("div", ["class": "subtype"], text: event.storeSubtype ?? "-"),
                        ]),
                    .element(
                        "td", ["class": "when"],
                        [
                            .element("div", text: "store \(Self.time(event.storeTimeMilliseconds))"),
                            .element("div", text: "arrived \(Self.time(event.verifiedTimeMilliseconds))"),
                        ]),
                    .element(
                        "td", ["class": "by"],
                        event.actor == nil && event.reason == nil
                            ? [.text("-")]
                            : [
                                .element("div", text: event.actor ?? "-"),
                                .element("div", ["class": "reason"], text: event.reason ?? "-"),
                            ]),
                    Self.cell(event.detail ?? "-", class: "detail"),
                    Self.cell(event.traceID ?? "-", class: "trace"),
                    .element("td", [payload]),
                ])
        }
        var content: [HTML] = [
            Self.table(
                "history",
                caption: "The audit trail, newest first: the account's and, from before they were linked, "
                    + "its subscriptions'",
                headers: [
                    "Kind", "Of", "Store type, subtype", "Store time, arrived", "By, reason", "Detail", "Trace",
                    "Payload",
                ],
                rows: rows)
        ]
        if history.nextPageToken != nil {
            content.append(
                .element(
                    "p",
                    text: "The newest \(Self.historyPageSize) events are shown; "
                        + "`subctl history --account ID --all` reads them all."))
        }
        for keyHistory in keyHistories {
            switch keyHistory.answer {
            case .success(let answer) where answer.nextPageToken != nil:
                content.append(
                    .element(
                        "p",
                        text: "The newest \(Self.historyPageSize) events of \(keyHistory.key) are shown; "
                            + "`subctl history --key \(keyHistory.key) --all` reads them all."))
            case .success:
                break
            case .failure(let error):
                content.append(
                    Self.sectionAlert("The history of \(keyHistory.key) was not read: \(Self.describe(error))"))
            }
        }
        return Self.section("history-section", "History", content)
    }
}
