import Foundation
import HTTP
import Model
import Sockets
import Synchronization
import Testing
import Wire

@testable import SubctlKit

@Suite("subctl console")
struct ConsoleTests {
    static let ledger = "subscriptions.ledger.v1.Ledger/"
    static let verifier = "subscriptions.verifier.v1.Verifier/"
    static let entitlement = "subscriptions.entitlement.v1.Entitlement/"

    static let hostileProduct = "\"><img src=x onerror=alert(1)>"
    static let hostileSubtype = "<script>alert('x')</script>"
    static let hostileAccount = "al'ice\"<b>"
    static let appleKey = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000001")
    static let googleKey = SubscriptionKey(store: .google, environment: .production, storeID: "token-abcdef")
    static let grantKey = SubscriptionKey(store: .promotional, environment: .production, storeID: "grant-7")

    /// An account with an App Store subscription whose product id is hostile, a Google Play one, a
    /// grant, a history whose subtype is hostile, and a timeline.
    static func serveAccount(_ fixture: ConsoleFixture, account: String = hostileAccount) {
        let apple = Subscription(
            key: appleKey, accountID: account, productID: hostileProduct, state: .active,
            purchaseTimeMilliseconds: 1_767_225_600_000, expiresTimeMilliseconds: 1_775_001_600_000, autoRenew: true,
            autoRenewProductID: "pro.yearly", bundleOrPackage: "com.example.app", latestOrderID: "2000000009")
        let google = Subscription(
            key: googleKey, accountID: account, productID: "pro_sub", state: .gracePeriod,
            purchaseTimeMilliseconds: 1_769_904_000_000, graceExpiresTimeMilliseconds: 1_773_000_000_000,
            autoRenew: true, bundleOrPackage: "com.example.app", latestOrderID: "GPA.1..2")
        let grant = Subscription(
            key: grantKey, accountID: account, productID: "pro", state: .active,
            purchaseTimeMilliseconds: 1_772_000_000_000, expiresTimeMilliseconds: 1_772_600_000_000)
        fixture.ledger.answer(
            ledger + "GetAccount",
            GetAccountResponse(
                accountID: account, subscriptions: [apple, google, grant],
                links: [AccountLink(accountID: account, key: appleKey, linkedTimeMilliseconds: 1_767_225_600_000)]))
        fixture.ledger.answer(
            ledger + "GetHistory",
            GetHistoryResponse(events: [
                LifecycleEvent(
                    position: 41, key: appleKey, kind: .renewed, storeTimeMilliseconds: 1_769_904_000_000,
                    verifiedTimeMilliseconds: 1_769_904_001_000, accountID: account, storeType: "DID_RENEW",
                    storeSubtype: hostileSubtype, rawPayload: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
                    traceID: "0af7651916cd43dd8448eb211c80319c"),
                LifecycleEvent(
                    position: 40, key: appleKey, kind: .accountLinked, storeTimeMilliseconds: 1_767_225_600_000,
                    accountID: account),
            ]))
        fixture.entitlement.answer(
            entitlement + "GetAccessTimeline",
            GetAccessTimelineResponse(capabilities: [
                CapabilityTimeline(
                    capability: "pro",
                    intervals: [
                        TimelineInterval(
                            kind: .paid, startMilliseconds: 1_767_225_600_000, endMilliseconds: 1_773_000_000_000,
                            allowed: true, reason: .granted),
                        TimelineInterval(
                            kind: .billingRetry, startMilliseconds: 1_773_000_000_000,
                            endMilliseconds: 1_775_000_000_000, allowed: false, reason: .stateDenies),
                    ])
            ]))
        fixture.entitlement.answer(
            entitlement + "CheckAccess", CheckAccessResponse(allowed: true, untilMilliseconds: 1_773_000_000_000))
    }

    @Test("the HTML builder escapes every text and attribute value")
    func escapes() {
        #expect(HTML.escape("<script>&\"'") == "&lt;script&gt;&amp;&quot;&#39;")
        let markup = HTML.element("a", ["href": "/x\"onmouseover='y'", "title": nil], text: "<b>").markup
        #expect(markup == "<a href=\"/x&quot;onmouseover=&#39;y&#39;\">&lt;b&gt;</a>")
    }

    @Test("store data on the account page is text, never markup: product ids, subtypes, account ids")
    func accountPageEscapesStoreData() async throws {
        let fixture = ConsoleFixture()
        Self.serveAccount(fixture)
        let session = await fixture.login()
        let page = await fixture.get(ConsoleTests.accountPath, session: session)
        #expect(page.status == 200)
        let html = page.text
        #expect(!html.contains("<img"))
        #expect(!html.contains("<script>alert"))
        #expect(!html.contains("<b>"))
        #expect(html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"))
        #expect(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"))
        #expect(html.contains("<h1>al&#39;ice&quot;&lt;b&gt;</h1>"))
        // The DOM the browser test relies on.
        for part in [
            "<span id=\"whoami\">support-alice · operator</span>", "<table id=\"subscriptions\">",
            "<tr class=\"subscription\"", "<td class=\"product\">", "<td class=\"key\">2000000001</td>",
            "<section id=\"timeline\"", "<section class=\"capability\" data-capability=\"pro\">",
            "class=\"interval kind-paid\"", "class=\"interval kind-billing-retry\"", "class=\"now-line\"",
            "<form id=\"instant\" method=\"get\"", "<input id=\"at\" name=\"at\" type=\"datetime-local\"",
            "<section id=\"pending\"", "<section id=\"links\"", "<section id=\"grants\"", "<table id=\"history\">",
            "<tr class=\"event\">", "<div class=\"subtype\">", "class=\"payload\"",
            "<td class=\"of\" title=\"apple/production/2000000001\">App Store &quot;&gt;&lt;img src=x onerror=alert(1)&gt;</td>",
            "https://apps.apple.com/account/subscriptions",
            "https://play.google.com/store/account/subscriptions?sku=pro_sub&amp;package=com.example.app",
            "data-action=\"refresh\"", "data-action=\"extend-renewal\"", "data-action=\"consumption\"",
            "data-action=\"refund-google-order\"", "data-action=\"revoke-google\"", "data-action=\"grant\"",
            "data-action=\"revoke-grant\"", "<title>paid from 2026-01-01T00:00:00Z to 2026-03-08T20:00:00Z</title>",
        ] {
            #expect(html.contains(part), "missing \(part)")
        }
        let sent = try #require(
            try fixture.ledger.last(Self.ledger + "GetAccount", as: GetAccountRequest.self))
        #expect(sent.accountID == Self.hostileAccount)
    }

    static let accountPath = "/account/" + Self.hostileAccount

    @Test("a history row says what it is about; a revoked subscription says when, not its renewal")
    func historySubjectAndRevokedRenewal() {
        #expect(Console.subject(Self.appleKey, product: "pro.monthly") == "App Store pro.monthly")
        #expect(Console.subject(Self.googleKey, product: nil) == "Google Play …abcdef")
        #expect(Console.subject(Self.grantKey, product: "pro") == "Grant pro")
        let account = SubscriptionKey(store: .promotional, environment: .production, storeID: "")
        #expect(Console.subject(account, product: nil) == "account")
        let revoked = Subscription(
            key: Self.googleKey, productID: "pro_sub", state: .revoked, expiresTimeMilliseconds: 1_769_904_000_000,
            revokedTimeMilliseconds: 1_769_904_088_000, revocationReason: "1")
        #expect(Console.renewal(revoked) == "revoked at 2026-02-01T00:01:28Z (1)")
        // A long purchase token is searched for whole and shown by its end.
        let token = String(repeating: "abcdefghij", count: 15)
        let link = Console.subscriptionLink(
            SubscriptionKey(store: .google, environment: .production, storeID: token), account: nil)
        #expect(
            link.markup
                == "<a class=\"find-link\" href=\"/find?q=\(token)\" title=\"\(token)\">find …\(token.suffix(16))</a>")
        // A grant of minutes still shows on a strip of months; a gap is drawn as long as it is.
        #expect(Console.drawnWidth(100, 100.01, kind: "granted") == 2)
        #expect(Console.drawnWidth(100, 130, kind: "paid") == 30)
        #expect(Console.drawnWidth(100, 100.5, kind: "gap") == 0.5)
    }

    @Test("an instant shows CheckAccess as of then, per capability")
    func accessAtAnInstant() async throws {
        let fixture = ConsoleFixture()
        Self.serveAccount(fixture)
        let session = await fixture.login()
        let page = await fixture.get(Self.accountPath, query: ["at": "2026-03-05T12:30"], session: session)
        #expect(page.text.contains("<ul id=\"access-at\""))
        #expect(page.text.contains("<li data-capability=\"pro\">pro: granted until 2026-03-08T20:00:00Z</li>"))
        // The instant picked is marked on the timeline beside now.
        #expect(page.text.contains("<line class=\"instant-line\""))
        // Closed, as SVG has no void elements: an unclosed line would hold the next one.
        #expect(!page.text.contains("\"40\"><line"))
        #expect(
            page.text.contains(
                ", the dashed line the instant picked (2026-03-05T12:30:00Z). After now, what holds if nothing "
                    + "more happens: a renewal the store has not made yet is not counted."))
        let sent = try #require(
            try fixture.entitlement.last(Self.entitlement + "CheckAccess", as: CheckAccessRequest.self))
        #expect(sent.atMilliseconds == 1_772_713_800_000)
        #expect(sent.capability == "pro")
    }

    @Test("CheckAccess at an instant shows its reason and the subscription or grant it rests on")
    func accessAtReasons() async throws {
        let cases: [(CheckAccessResponse, String)] = [
            (
                CheckAccessResponse(
                    allowed: true, untilMilliseconds: 1_773_000_000_000, reason: .granted,
                    grant: AccessGrant(key: Self.appleKey, productID: "pro.monthly", state: .active)),
                "pro: granted until 2026-03-08T20:00:00Z; rests on apple/production/2000000001 (pro.monthly, now active)"
            ),
            (CheckAccessResponse(allowed: false, reason: .noGrant), "pro: not granted (no grant)"),
            (
                CheckAccessResponse(
                    allowed: false, reason: .expired,
                    grant: AccessGrant(key: Self.googleKey, productID: "pro_sub", state: .expired),
                    detail: "expired at 2026-03-04T00:00:00Z"),
                "pro: not granted (expired); rests on google/production/token-abcdef (pro_sub, now expired); "
                    + "expired at 2026-03-04T00:00:00Z"
            ),
            (
                CheckAccessResponse(allowed: false, reason: .revoked, grant: AccessGrant(key: Self.grantKey)),
                "pro: not granted (revoked); rests on promotional/production/grant-7"
            ),
        ]
        for (answer, text) in cases {
            let fixture = ConsoleFixture()
            Self.serveAccount(fixture)
            fixture.entitlement.answer(Self.entitlement + "CheckAccess", answer)
            let page = await fixture.get(
                Self.accountPath, query: ["at": "2026-03-05T12:30"], session: await fixture.login())
            #expect(page.text.contains("<li data-capability=\"pro\">\(text)</li>"), "\(text)")
        }
    }

    /// The history rows of an account page: each one's kind and payload link (nil without).
    static func historyRows(_ html: String) -> [(kind: String, link: String?)] {
        html.components(separatedBy: "<tr class=\"event\">").dropFirst().map { row in
            let kind = row.components(separatedBy: "<td class=\"kind\">")[1].components(separatedBy: "<")[0]
            let link = row.components(separatedBy: "class=\"payload\" href=\"").dropFirst().first?
                .components(separatedBy: "\"")[0]
            return (kind, link)
        }
    }

    @Test(
        "the history adds each subscription's own history (its purchase before the link), an event both hold once, newest first, each with the payload link to where it was read"
    )
    func historyWithSubscriptions() async throws {
        let fixture = ConsoleFixture()
        Self.serveAccount(fixture, account: "alice")
        fixture.ledger.answer(
            Self.ledger + "GetHistory", to: GetHistoryRequest(key: Self.appleKey, pageSize: 200),
            GetHistoryResponse(events: [
                // The account's renewal, read again under the key: shown once, as the account's.
                LifecycleEvent(position: 41, key: Self.appleKey, kind: .renewed, storeType: "DID_RENEW"),
                LifecycleEvent(position: 12, key: Self.appleKey, kind: .stateRefreshed),
                LifecycleEvent(
                    position: 11, key: Self.appleKey, kind: .purchased, storeType: "SUBSCRIBED",
                    rawPayload: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
            ]))
        fixture.ledger.answer(
            Self.ledger + "GetHistory", to: GetHistoryRequest(key: Self.googleKey, pageSize: 200),
            GetHistoryResponse(
                events: [
                    LifecycleEvent(
                        position: 12, key: Self.googleKey, kind: .purchased, storeType: "SUBSCRIPTION_PURCHASED",
                        rawPayload: "{}")
                ], nextPageToken: "more"))
        fixture.ledger.fail(Self.ledger + "GetHistory", SubctlError(.rpc(.unavailable), "ledger down"))
        fixture.ledger.answer(
            Self.ledger + "GetHistory", to: GetHistoryRequest(accountID: "alice", pageSize: 200),
            GetHistoryResponse(events: [
                LifecycleEvent(
                    position: 41, key: Self.appleKey, kind: .renewed, accountID: "alice", storeType: "DID_RENEW",
                    rawPayload: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
                LifecycleEvent(position: 40, key: Self.appleKey, kind: .accountLinked, accountID: "alice"),
            ]))
        let page = await fixture.get("/account/alice", session: await fixture.login())
        #expect(page.status == 200)
        let rows = Self.historyRows(page.text)
        #expect(rows.map(\.kind) == ["renewed", "account_linked", "state_refreshed", "purchased", "purchased"])
        #expect(
            rows.map(\.link) == [
                "/payload?account=alice&amp;position=41&amp;index=0", nil, nil,
                "/payload?account=alice&amp;key=google%2Fproduction%2Ftoken-abcdef&amp;position=12&amp;index=0",
                "/payload?account=alice&amp;key=apple%2Fproduction%2F2000000001&amp;position=11&amp;index=0",
            ])
        #expect(
            page.text.contains(
                "The newest 200 events of google/production/token-abcdef are shown; "
                    + "`subctl history --key google/production/token-abcdef --all` reads them all."))
        #expect(page.text.contains("The history of promotional/production/grant-7 was not read: "))
        let keys = fixture.ledger.requests.withLock { requests in
            requests.filter { $0.method == Self.ledger + "GetHistory" }.compactMap {
                try? GetHistoryRequest(serialized: $0.bytes).key
            }
        }
        #expect(keys == [Self.appleKey, Self.googleKey, Self.grantKey])
    }

    @Test("merging histories: newest first by position, then each answer's order, the account's first; duplicates once")
    func mergedHistoryOrder() {
        let a = LifecycleEvent(position: 5, key: Self.appleKey, kind: .renewed, storeType: "DID_RENEW")
        let b = LifecycleEvent(position: 5, key: Self.appleKey, kind: .renewed, storeType: "DID_RENEW", detail: "b")
        let c = LifecycleEvent(position: 5, key: Self.appleKey, kind: .stateRefreshed)
        let d = LifecycleEvent(position: 7, key: Self.googleKey, kind: .purchased, notificationID: "m-1")
        let e = LifecycleEvent(position: 7, key: Self.googleKey, kind: .purchased, notificationID: "m-2")
        let rows = Console.mergedHistory([a, c], [(Self.appleKey, [b, c, e]), (Self.googleKey, [d, e])])
        #expect(rows.map(\.event) == [e, d, a, c])
        #expect(rows.map(\.key) == [Self.appleKey, Self.googleKey, nil, nil])
        #expect(rows.map(\.index) == [0, 0, 0, 1])
    }

    @Test("the timeline reaches 7 days past the latest expiry or renewal when that is after 31 days from now")
    func timelineWindow() async throws {
        let now = ConsoleFixture.now
        let day: Int64 = 86_400_000
        let yearly = Subscription(
            key: Self.appleKey, productID: "pro.yearly", state: .active, expiresTimeMilliseconds: now + 300 * day,
            renewalTimeMilliseconds: now + 301 * day)
        let extended = Subscription(key: Self.grantKey, productID: "pro", expiresTimeMilliseconds: now + 40 * day)
        let soon = Subscription(key: Self.googleKey, productID: "pro_sub", expiresTimeMilliseconds: now + 20 * day)
        #expect(Console.timelineEnd(now: now, [yearly, extended, soon]) == now + 308 * day)
        #expect(Console.timelineEnd(now: now, [extended, soon]) == now + 47 * day)
        #expect(Console.timelineEnd(now: now, [soon]) == now + 31 * day)
        #expect(Console.timelineEnd(now: now, []) == now + 31 * day)
        let fixture = ConsoleFixture()
        Self.serveAccount(fixture, account: "alice")
        fixture.ledger.answer(
            Self.ledger + "GetAccount", GetAccountResponse(accountID: "alice", subscriptions: [yearly, soon]))
        _ = await fixture.get("/account/alice", session: await fixture.login())
        let sent = try #require(
            try fixture.entitlement.last(Self.entitlement + "GetAccessTimeline", as: GetAccessTimelineRequest.self))
        #expect(sent.toMilliseconds == now + 308 * day)
    }

    @Test("without a session every page answers 401 and says to open the printed address; the token logs in")
    func login() async throws {
        let fixture = ConsoleFixture()
        for path in ["/", "/find", "/queues", "/account/alice", "/payload"] {
            let response = await fixture.get(path, session: nil)
            #expect(response.status == 401)
            #expect(response.text.contains("Open the address `subctl console` printed"))
        }
        #expect(await fixture.get("/", session: "forged").status == 401)
        // A visitor without a session is not told who the console acts as, nor where to go.
        let stranger = await fixture.get("/", session: nil).text
        #expect(!stranger.contains("whoami") && !stranger.contains("<nav"))
        #expect(await fixture.get("/login", query: ["token": "ab"], session: nil).status == 401)
        let login = await fixture.get("/login", query: ["token": ConsoleFixture.token], session: nil)
        #expect(login.status == 303)
        #expect(login.header("Location") == "/")
        let cookie = try #require(login.header("Set-Cookie"))
        #expect(cookie.hasSuffix("; HttpOnly; SameSite=Strict; Path=/"))
        let session = await fixture.login()
        let home = await fixture.get("/", session: session)
        #expect(home.status == 200)
        #expect(home.text.contains("<form id=\"find-form\" method=\"get\" action=\"/find\""))
        #expect(home.text.contains("<input id=\"q\" name=\"q\""))
        #expect(home.text.contains("<ul id=\"recent\""))
        #expect(fixture.calls.isEmpty)
    }

    @Test("with --no-login the first page opens a session")
    func noLogin() async {
        let fixture = ConsoleFixture(requireLogin: false)
        let home = await fixture.get("/", session: nil)
        #expect(home.status == 200)
        #expect(home.header("Set-Cookie")?.hasPrefix("console_session_8123=") == true)
    }

    @Test("a Host that is not the console's address is refused; localhost:PORT is its address too")
    func hostRefused() async {
        let fixture = ConsoleFixture()
        let session = await fixture.login()
        for host in ["evil.example:8123", "127.0.0.1:9999", "127.0.0.1"] {
            let response = await fixture.get("/", session: session, headers: ["host": host])
            #expect(response.status == 403)
            #expect(response.text.hasPrefix("refused: this console answers only at http://127.0.0.1:8123/"))
        }
        #expect(await fixture.get("/", session: session, headers: ["host": "localhost:8123"]).status == 200)
    }

    @Test("--origin: the proxy's host and origin are the console's too, and the address it prints")
    func proxiedOrigin() async throws {
        let origin = try #require(ConsoleOrigin(parsing: "https://Support.Example.com/"))
        #expect(origin.origin == "https://support.example.com")
        #expect(origin.host == "support.example.com")
        #expect(ConsoleOrigin(parsing: "http://127.0.0.1:8090")?.host == "127.0.0.1:8090")
        #expect(ConsoleOrigin(parsing: "https://support.example.com:443")?.origin == "https://support.example.com")
        for bad in ["support.example.com", "ftp://x", "https://x/path", "https://x:0", "https://a b", "https://"] {
            #expect(ConsoleOrigin(parsing: bad) == nil, "\(bad)")
        }
        let fixture = ConsoleFixture(requireLogin: false, origin: origin)
        #expect(fixture.console.readyURL(ConsoleFixture.address) == "https://support.example.com/")
        let opened = await fixture.get("/", session: nil, headers: ["host": "support.example.com"])
        #expect(opened.status == 200)
        let cookie = opened.header("Set-Cookie") ?? ""
        let session = String(cookie.prefix { $0 != ";" }.dropFirst("console_session_8123=".count))
        let proxied = ["host": "support.example.com", "origin": "https://support.example.com"]
        let done = await fixture.post("/action/refresh", Self.refresh, session: session, headers: proxied)
        #expect(done.status == 200, "\(done.text)")
        let foreign = ["host": "support.example.com", "origin": "https://evil.example"]
        #expect(await fixture.post("/action/refresh", Self.refresh, session: session, headers: foreign).status == 403)
    }

    static let refresh: [(String, String)] = [
        ("key", "apple/production/2000000001"), ("reason", "ticket 4711"), ("return", "/account/alice"),
    ]

    @Test(
        "a POST without the session, its CSRF token or from another origin is refused and calls nothing",
        arguments: [
            ("no session", nil, nil, [:]),
            ("no token", "", "", [:]),
            ("a wrong token", "", String(repeating: "0", count: 64), [:]),
            ("a foreign Origin", "", nil, ["origin": "http://evil.example"]),
            ("a cross-site fetch", "", nil, ["sec-fetch-site": "cross-site"]),
        ] as [(String, String?, String?, [String: String])])
    func csrfRefused(_ what: String, session: String?, csrf: String?, headers: [String: String]) async {
        let fixture = ConsoleFixture()
        let real = await fixture.login()
        let response = await fixture.post(
            "/action/refresh", Self.refresh + [("confirm", "yes")], session: session.map { _ in real }, csrf: csrf,
            headers: headers)
        #expect(response.status == 403, "\(what)")
        #expect(response.text.contains("cross-site request refused"))
        #expect(fixture.calls.isEmpty)
    }

    @Test("every answer carries the security headers")
    func headers() async {
        let fixture = ConsoleFixture()
        let session = await fixture.login()
        let answers = [
            await fixture.get("/", session: session), await fixture.get("/", session: nil),
            await fixture.get("/nowhere", session: session), await fixture.get("/static/console.css", session: nil),
            await fixture.get("/static/console.js", session: nil),
            await fixture.get("/", session: session, headers: ["host": "evil.example"]),
            await fixture.post("/action/refresh", Self.refresh, session: nil),
            await fixture.get("/login", query: ["token": ConsoleFixture.token], session: nil),
        ]
        for answer in answers {
            #expect(
                answer.header("Content-Security-Policy")
                    == "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                    + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
            #expect(answer.header("X-Content-Type-Options") == "nosniff")
            #expect(answer.header("Referrer-Policy") == "same-origin")
            #expect(answer.header("Cache-Control") == "no-store")
        }
        #expect(!answers[0].text.contains("style="))
        #expect(!answers[0].text.contains("<script>"))
    }

    @Test("an action is confirmed first, then calls the service with the reason and shows its answer")
    func confirmThenAct() async throws {
        let fixture = ConsoleFixture()
        Self.serveAccount(fixture, account: "alice")
        fixture.ledger.answer(
            Self.ledger + "GrantEntitlement",
            GrantEntitlementResponse(
                grant: Subscription(
                    key: Self.grantKey, productID: "pro", expiresTimeMilliseconds: 1_772_582_400_000), position: 9))
        let session = await fixture.login()
        let fields = [
            ("account", "alice"), ("capability", "pro"), ("days", "3"), ("reason", "ticket 4742: outage"),
            ("return", "/account/alice"),
        ]
        let confirm = await fixture.post("/action/grant", fields, session: session)
        #expect(confirm.status == 200)
        #expect(fixture.calls.isEmpty)
        let html = confirm.text
        #expect(html.contains("<section id=\"confirm\""))
        #expect(
            html.contains(
                "<p id=\"confirm-summary\">Grant capability pro to account alice for 3 days from now (GrantEntitlement); "
                    + "nothing changes at the stores.</p>"))
        #expect(html.contains("<form id=\"confirm-form\" method=\"post\" action=\"/action/grant\">"))
        #expect(html.contains("<input type=\"hidden\" name=\"confirm\" value=\"yes\">"))
        #expect(html.contains("<button id=\"confirm-button\" type=\"submit\">"))
        let key = try #require(html.firstMatch(of: /name="idempotency_key" value="(console-[0-9a-f-]{36})"/)?.1)
        let done = await fixture.post(
            "/action/grant", fields + [("idempotency_key", String(key)), ("confirm", "yes")], session: session)
        #expect(done.status == 303)
        #expect(done.header("Location") == "/account/alice")
        // The ledger records it; the policy was asked whether it knows the capability (here it
        // cannot say). (Calls are listed by service.)
        #expect(fixture.calls == ["Ledger/GrantEntitlement", "Entitlement/CheckAccess"])
        let sent = try #require(
            try fixture.ledger.last(Self.ledger + "GrantEntitlement", as: GrantEntitlementRequest.self))
        #expect(sent.reason == "ticket 4742: outage")
        #expect(sent.accountID == "alice")
        #expect(sent.capability == "pro")
        #expect(sent.durationMilliseconds == Int64(259_200_000))
        #expect(sent.idempotencyKey == String(key))
        let after = await fixture.get("/account/alice", session: session)
        #expect(
            after.text.contains(
                "<p id=\"result\" role=\"status\">granted pro to alice until 2026-03-04T00:00:00Z (grant grant-7)</p>"))
        // Shown once.
        #expect(!(await fixture.get("/account/alice", session: session)).text.contains("id=\"result\""))
    }

    @Test("a grant of a capability the product policy does not name is refused before the ledger records it")
    func grantOfUnknownCapability() async throws {
        let fixture = ConsoleFixture()
        fixture.entitlement.answer(
            Self.entitlement + "CheckAccess", CheckAccessResponse(allowed: false, reason: .unknownCapability))
        let session = await fixture.login()
        let done = await fixture.post(
            "/action/grant",
            [
                ("account", "alice"), ("capability", "premum"), ("days", "7"), ("reason", "ticket 1"),
                ("return", "/account/alice"), ("idempotency_key", "k-1"), ("confirm", "yes"),
            ], session: session)
        #expect(done.status == 303)
        #expect(fixture.calls == ["Entitlement/CheckAccess"])
        let asked = try #require(
            try fixture.entitlement.last(Self.entitlement + "CheckAccess", as: CheckAccessRequest.self))
        #expect(asked == CheckAccessRequest(accountID: "alice", capability: "premum"))
        #expect(
            (await fixture.get("/", session: session)).text.contains(
                "Grant access failed: INVALID_ARGUMENT: capability &quot;premum&quot; is not in the entitlement "
                    + "service&#39;s product policy, so a grant of it would give nothing: check its spelling; "
                    + "nothing was granted"))
    }

    @Test("a Google refund goes through subctl google refund's call, and a service's refusal is shown as an alert")
    func serviceErrorShown() async throws {
        let fixture = ConsoleFixture()
        fixture.verifier.fail(
            Self.verifier + "RefundGoogleOrder", SubctlError(.rpc(.permissionDenied), "support-alice may not call it"))
        let session = await fixture.login()
        let done = await fixture.post(
            "/action/refund-google-order",
            [
                ("package", "com.example.app"), ("token", "token-abcdef"), ("order_id", "GPA.1..2"), ("revoke", "yes"),
                ("reason", "ticket 4732"), ("return", "/"), ("confirm", "yes"),
            ], session: session)
        #expect(done.status == 303)
        let sent = try #require(
            try fixture.verifier.last(Self.verifier + "RefundGoogleOrder", as: RefundGoogleOrderRequest.self))
        #expect(
            sent
                == RefundGoogleOrderRequest(
                    packageName: "com.example.app", orderID: "GPA.1..2", purchaseToken: "token-abcdef", revoke: true,
                    reason: "ticket 4732"))
        let home = await fixture.get("/", session: session)
        #expect(
            home.text.contains(
                "<p id=\"error\" role=\"alert\">Refund order failed: PERMISSION_DENIED: support-alice may not call it</p>"
            ))
    }

    @Test("a missing or empty reason is refused before any call", arguments: [nil, "", "   "] as [String?])
    func reasonRequired(_ reason: String?) async {
        let fixture = ConsoleFixture()
        let session = await fixture.login()
        var fields: [(String, String)] = [("key", "apple/production/2000000001"), ("confirm", "yes")]
        if let reason { fields.append(("reason", reason)) }
        let response = await fixture.post("/action/refresh", fields, session: session)
        #expect(response.status == 400)
        #expect(response.text.contains("<p id=\"error\" role=\"alert\">a reason is required: nothing was done</p>"))
        #expect(fixture.calls.isEmpty)
    }

    @Test("refresh, replay and redelivery call their methods; the page to return to stays on this console")
    func otherActions() async throws {
        let fixture = ConsoleFixture()
        fixture.verifier.answer(
            Self.verifier + "RefreshSubscription",
            RefreshSubscriptionResponse(
                subscription: Subscription(key: Self.appleKey, state: .active), changed: true, position: 12))
        fixture.ledger.answer(Self.ledger + "ReplayDeliveries", GetDeliveryStateResponse(deliveredThrough: 80))
        let session = await fixture.login()
        let refreshed = await fixture.post(
            "/action/refresh",
            [
                ("key", "apple/production/2000000001"), ("reason", "r"), ("return", "//evil.example/"),
                ("confirm", "yes"),
            ],
            session: session)
        #expect(refreshed.header("Location") == "/")
        let refresh = try #require(
            try fixture.verifier.last(Self.verifier + "RefreshSubscription", as: RefreshSubscriptionRequest.self))
        #expect(refresh == RefreshSubscriptionRequest(key: Self.appleKey, reason: "r"))
        #expect(
            (await fixture.get("/", session: session)).text.contains(
                "<p id=\"result\" role=\"status\">refreshed apple/production/2000000001: changed, state active (recorded at ledger position 12)</p>"
            ))
        _ = await fixture.post(
            "/action/redeliver-webhook",
            [("endpoint", "crm"), ("sequence", "77"), ("reason", "r"), ("return", "/queues"), ("confirm", "yes")],
            session: session)
        let replay = try #require(
            try fixture.ledger.last(Self.ledger + "ReplayDeliveries", as: ReplayDeliveriesRequest.self))
        // That dead letter only, with the reason.
        #expect(replay == ReplayDeliveriesRequest(endpoint: "crm", afterSequence: 0, sequence: 77, reason: "r"))
        fixture.ledger.answer(Self.ledger + "ReplayInbox", MarkInboxResponse())
        _ = await fixture.post(
            "/action/replay-inbox",
            [
                ("store", "apple"), ("notification_id", "n-1"), ("reason", "r"), ("return", "/queues"),
                ("confirm", "yes"),
            ],
            session: session)
        let replayed = try #require(try fixture.ledger.last(Self.ledger + "ReplayInbox", as: ReplayInboxRequest.self))
        #expect(replayed == ReplayInboxRequest(store: .apple, notificationID: "n-1", reason: "r"))
        // It says what happens next: the verifier's next pass, not at once.
        #expect(
            (await fixture.get("/queues", session: session)).text.contains(
                "<p id=\"result\" role=\"status\">put back to pending for the verifier&#39;s next reconciliation pass: n-1</p>"
            ))
        let confirmation = await fixture.post(
            "/action/replay-inbox",
            [("store", "google"), ("notification_id", "n-2"), ("reason", "r"), ("return", "/queues")],
            session: session)
        #expect(
            confirmation.text.contains(
                "(ReplayInbox): the verifier processes it again at its next reconciliation pass (every "
                    + "GOOGLE_RECONCILE_INTERVAL, an hour unless configured)."))
    }

    @Test("the read-only role sees no action forms and no payload links, and /action and /payload answer 403")
    func readOnly() async throws {
        let fixture = ConsoleFixture(readOnly: true)
        Self.serveAccount(fixture)
        fixture.ledger.answer(
            Self.ledger + "ListInbox",
            ListInboxResponse(entries: [
                InboxEntry(
                    store: .apple, notificationID: "n-1", notificationType: "DID_RENEW", status: .failed,
                    key: Self.appleKey)
            ]))
        fixture.ledger.answer(Self.ledger + "ListSubscriptions", ListSubscriptionsResponse())
        fixture.ledger.answer(Self.ledger + "ListDeadLetters", ListDeadLettersResponse())
        let session = await fixture.login()
        let account = await fixture.get(Self.accountPath, session: session)
        #expect(account.status == 200)
        #expect(account.text.contains("<span id=\"whoami\">support-alice · read-only</span>"))
        #expect(!account.text.contains("class=\"action\""))
        #expect(!account.text.contains("class=\"payload\""))
        let queues = await fixture.get("/queues", session: session)
        #expect(queues.status == 200)
        #expect(!queues.text.contains("class=\"action\""))
        let before = fixture.calls
        let refused = await fixture.post("/action/refresh", Self.refresh + [("confirm", "yes")], session: session)
        #expect(refused.status == 403)
        #expect(fixture.calls == before)
        let payload = await fixture.get(
            "/payload", query: ["account": Self.hostileAccount, "position": "41", "index": "0"], session: session)
        #expect(payload.status == 403)
        #expect(fixture.calls == before)
    }

    @Test("find says what the value was taken as and links each account; a miss names what was tried")
    func find() async throws {
        let fixture = ConsoleFixture()
        fixture.verifier.answer(
            Self.verifier + "Find",
            FindResponse(
                takenAs: .googleOrderID, accountIDs: ["a/b c"],
                subscriptions: [
                    FoundSubscription(
                        matched: .googleOrderID,
                        subscription: Subscription(
                            key: Self.googleKey, accountID: "a/b c", productID: "pro_sub", state: .active))
                ]))
        let session = await fixture.login()
        let found = await fixture.get("/find", query: ["q": " GPA.1..2 "], session: session)
        #expect(found.text.contains("<p id=\"taken-as\">“GPA.1..2” was taken as Google order id.</p>"))
        #expect(found.text.contains("<ul id=\"results\""))
        #expect(found.text.contains("<a class=\"account-link\" href=\"/account/a%2Fb%20c\">a/b c</a>"))
        #expect(try fixture.verifier.last(Self.verifier + "Find", as: FindRequest.self)?.value == "GPA.1..2")
        #expect((await fixture.get("/", session: session)).text.contains("<a href=\"/find?q=GPA.1..2\">GPA.1..2</a>"))
        fixture.verifier.fail(
            Self.verifier + "Find", SubctlError(.rpc(.notFound), "nothing in the ledger matches \"zz\" as account id"))
        let missed = await fixture.get("/find", query: ["q": "zz"], session: session)
        #expect(missed.status == 404)
        #expect(
            missed.text.contains(
                "<p id=\"not-found\">Nothing found: nothing in the ledger matches &quot;zz&quot; as account id</p>"))
    }

    @Test("console parses its addresses, with the services' defaults, and refuses a bad flag")
    func parses() throws {
        let command = try SubctlCommand.parse([
            "console", "--listen", "127.0.0.1:0", "--apple-root", "a.pem", "--apple-root", "b.pem", "--no-login",
        ])
        let options = { (port: Int) in
            CallOptions(address: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        }
        #expect(
            command
                == .console(
                    ConsoleOptions(
                        listen: HostPort(host: "127.0.0.1", port: 0), ledger: options(7002), verifier: options(7001),
                        entitlement: options(7003), appleRoots: ["a.pem", "b.pem"], login: false)))
        #expect(command.callOptions == nil)
        #expect(throws: SubctlError(.usage, "console needs --listen HOST:PORT (port 0 picks a free one)")) {
            try SubctlCommand.parse(["console"])
        }
        #expect(throws: SubctlError(.usage, "unknown option --addr for console")) {
            try SubctlCommand.parse(["console", "--listen", "127.0.0.1:0", "--addr", "x:1"])
        }
        #expect(throws: SubctlError(.usage, "--ledger expects HOST:PORT with a port 1...65535, got \"nowhere\"")) {
            try SubctlCommand.parse(["console", "--listen", "127.0.0.1:0", "--ledger", "nowhere"])
        }
        let proxied = try SubctlCommand.parse([
            "console", "--listen", "0.0.0.0:8090", "--no-login", "--origin=https://support.example.com",
        ])
        guard case .console(let proxiedOptions) = proxied else { throw SubctlError(.usage, "not a console") }
        #expect(proxiedOptions.origin == ConsoleOrigin(parsing: "https://support.example.com"))
        #expect(
            throws: SubctlError(
                .usage,
                "--origin expects the address the console is served under, http[s]://HOST[:PORT] with no path, "
                    + "got \"support.example.com\"")
        ) {
            try SubctlCommand.parse(["console", "--listen", "127.0.0.1:0", "--origin", "support.example.com"])
        }
    }
}

@Suite("subctl console: work queues")
struct ConsoleQueuesTests {
    static let ledger = "subscriptions.ledger.v1.Ledger/"

    @Test(
        "the queues list failed and rejected notifications, purchases owed an acknowledgement and dead letters, each with its action"
    )
    func queues() async throws {
        let fixture = ConsoleFixture()
        let apple = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000001")
        fixture.ledger.answer(
            Self.ledger + "ListInbox",
            ListInboxResponse(entries: [
                InboxEntry(
                    store: .apple, notificationID: "n-<1>", notificationType: "DID_RENEW", status: .failed,
                    attempts: 3, lastError: "ledger unavailable", key: apple)
            ]))
        let owed = Subscription(
            key: SubscriptionKey(store: .google, environment: .production, storeID: "token-1"), accountID: "bob",
            productID: "pro_sub", state: .active, acknowledged: false)
        // The ledger's filter answers only those owed.
        fixture.ledger.answer(Self.ledger + "ListSubscriptions", ListSubscriptionsResponse(subscriptions: [owed]))
        fixture.ledger.answer(
            Self.ledger + "ListDeadLetters",
            ListDeadLettersResponse(deadLetters: [
                DeadLetter(
                    endpoint: "crm",
                    attempt: DeliveryAttempt(
                        sequence: 77, attempts: 9, lastStatus: 500,
                        event: Event(id: "evt_40_0", type: "access.granted", accountID: "dave", sequence: 77)))
            ]))
        let page = await fixture.get("/queues", session: await fixture.login())
        #expect(page.status == 200)
        let html = page.text
        for part in [
            "<section id=\"failed-notifications\"", "<section id=\"acks-owed\"", "<section id=\"dead-letters\"",
            "data-action=\"replay-inbox\"", "<input type=\"hidden\" name=\"notification_id\" value=\"n-&lt;1&gt;\">",
            "<input type=\"hidden\" name=\"key\" value=\"google/production/token-1\">",
            "data-action=\"redeliver-webhook\"", "<input type=\"hidden\" name=\"sequence\" value=\"77\">",
            "<a class=\"account-link\" href=\"/account/bob\">bob</a>",
            "<a class=\"account-link\" href=\"/account/dave\">dave</a>",
            "<a class=\"find-link\" href=\"/find?q=2000000001\" title=\"2000000001\">find 2000000001</a>",
        ] {
            #expect(html.contains(part), "missing \(part)")
        }
        // Failed and rejected entries, Google subscriptions, every endpoint's dead letters.
        #expect(
            fixture.calls == [
                "Ledger/ListInbox", "Ledger/ListInbox", "Ledger/GetSubscription", "Ledger/ListSubscriptions",
                "Ledger/ListDeadLetters",
            ])
        let inbox = try #require(try fixture.ledger.last(Self.ledger + "ListInbox", as: ListInboxRequest.self))
        #expect(inbox.status == .rejected)
        let listed = try #require(
            try fixture.ledger.last(Self.ledger + "ListSubscriptions", as: ListSubscriptionsRequest.self))
        #expect(listed == ListSubscriptionsRequest(store: .google, pageSize: 200, unacknowledged: true))
    }

    @Test("a failed notification's row links the account that holds its subscription, looked up once a key")
    func failedRowHolder() async throws {
        let fixture = ConsoleFixture()
        let apple = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000001")
        let entries = ["n-1", "n-2"].map { id in
            InboxEntry(
                store: .apple, notificationID: id, notificationType: "DID_RENEW", status: .failed, attempts: 1,
                key: apple)
        }
        fixture.ledger.answer(Self.ledger + "ListInbox", ListInboxResponse(entries: entries))
        fixture.ledger.answer(
            Self.ledger + "GetSubscription",
            GetSubscriptionResponse(subscription: Subscription(key: apple, accountID: "erin", productID: "pro.monthly"))
        )
        let html = await fixture.get("/queues", session: await fixture.login()).text
        #expect(
            html.components(separatedBy: "<a class=\"account-link\" href=\"/account/erin\">erin</a>").count - 1 == 4,
            "each of the two entries, failed and rejected alike, links erin: \(html)")
        #expect(!html.contains("find 2000000001"))
        #expect(fixture.calls.filter { $0 == "Ledger/GetSubscription" }.count == 1)
        let asked = try #require(
            try fixture.ledger.last(Self.ledger + "GetSubscription", as: GetSubscriptionRequest.self))
        #expect(asked == GetSubscriptionRequest(key: apple, stateOnly: true))
    }
}

@Suite("subctl console: purchases no account holds, and grants that ran out")
struct ConsoleUnlinkedTests {
    static let ledger = "subscriptions.ledger.v1.Ledger/"
    static let verifier = "subscriptions.verifier.v1.Verifier/"
    static let token = SubscriptionKey(store: .google, environment: .production, storeID: "token-9")

    @Test("an unacknowledged purchase no account holds offers a restore to an account, with Play's deadline")
    func unlinkedQueueRow() async throws {
        let fixture = ConsoleFixture()
        let owed = Subscription(
            key: Self.token, productID: "pro_sub", state: .active, purchaseTimeMilliseconds: 1_772_323_200_000,
            acknowledged: false, bundleOrPackage: "com.example.app")
        fixture.ledger.answer(Self.ledger + "ListSubscriptions", ListSubscriptionsResponse(subscriptions: [owed]))
        let session = await fixture.login()
        let html = await fixture.get("/queues", session: session).text
        for part in [
            "<td>2026-03-04T00:00:00Z</td>", "No account holds it: an acknowledgement waits for it to be linked.",
            "data-action=\"restore\"", "<input type=\"hidden\" name=\"key\" value=\"google/production/token-9\">",
            "<input type=\"hidden\" name=\"package\" value=\"com.example.app\">",
            "<input type=\"hidden\" name=\"product\" value=\"pro_sub\">",
        ] {
            #expect(html.contains(part), "missing \(part)")
        }
        #expect(!html.contains("data-action=\"refresh\""))
        fixture.verifier.answer(
            Self.verifier + "RestorePurchases",
            RestorePurchasesResponse(subscriptions: [
                Subscription(key: Self.token, accountID: "bob", state: .active, acknowledged: true)
            ]))
        let fields: [(String, String)] = [
            ("key", "google/production/token-9"), ("package", "com.example.app"), ("product", "pro_sub"),
            ("account", "bob"), ("reason", "ticket 9"), ("return", "/queues"), ("idempotency_key", "k-9"),
            ("confirm", "yes"),
        ]
        let done = await fixture.post("/action/restore", fields, session: session)
        #expect(done.status == 303)
        // The outcome is shown on the page of the account it went to.
        #expect(done.header("Location") == "/account/bob")
        let request = try #require(
            try fixture.verifier.last(Self.verifier + "RestorePurchases", as: RestorePurchasesRequest.self))
        #expect(
            request
                == RestorePurchasesRequest(
                    accountID: "bob",
                    googlePurchases: [
                        GooglePurchaseRef(
                            packageName: "com.example.app", productID: "pro_sub", purchaseToken: "token-9")
                    ], idempotencyKey: "k-9", reason: "ticket 9"))
        #expect(
            (await fixture.get("/queues", session: session)).text.contains(
                "<p id=\"result\" role=\"status\">restored google/production/token-9 to bob: state active, acknowledged</p>"
            ))
    }

    @Test("a grant past its end reads ended and offers no revoke")
    func endedGrant() async throws {
        let fixture = ConsoleFixture()
        let grant = Subscription(
            key: SubscriptionKey(store: .promotional, environment: .production, storeID: "grant_1"), accountID: "alice",
            productID: "premium", state: .active, purchaseTimeMilliseconds: 1_767_225_600_000,
            expiresTimeMilliseconds: ConsoleFixture.now - 1)
        fixture.ledger.answer(
            Self.ledger + "GetAccount", GetAccountResponse(accountID: "alice", subscriptions: [grant]))
        fixture.ledger.answer(Self.ledger + "GetHistory", GetHistoryResponse())
        let html = await fixture.get("/account/alice", session: await fixture.login()).text
        #expect(html.contains("<td class=\"state\">ended</td>"), "\(html)")
        #expect(html.contains("(ended), grant grant_1"))
        #expect(!html.contains("data-action=\"revoke-grant\""))
    }
}
