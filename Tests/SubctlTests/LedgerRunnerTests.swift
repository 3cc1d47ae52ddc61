import Model
import SubctlKit
import Synchronization
import Testing
import Wire

/// Answers GetHistory with the page its request's token names (`""` for the first) and
/// records each request.
final class HistoryPagesTransport: BytesTransport {
    let pages: [String: GetHistoryResponse]
    let requests = Mutex<[GetHistoryRequest]>([])

    init(_ pages: [String: GetHistoryResponse]) { self.pages = pages }

    func unary(_ method: String, request: [UInt8], timeout: Duration?) async throws(SubctlError) -> [UInt8] {
        #expect(method == "subscriptions.ledger.v1.Ledger/GetHistory")
        let decoded: GetHistoryRequest
        do {
            decoded = try GetHistoryRequest(serialized: request)
        } catch {
            throw SubctlError(.rpc(.invalidArgument), error.message)
        }
        requests.withLock { $0.append(decoded) }
        guard let page = pages[decoded.pageToken ?? ""] else {
            throw SubctlError(.rpc(.invalidArgument), "bad page token")
        }
        return page.serialized()
    }

    func stream(_ method: String, request: [UInt8], timeout: Duration?) -> (messages: [[UInt8]], end: SubctlError?) {
        ([], SubctlError(.rpc(.unimplemented), method))
    }
}

@Suite("CommandRunner: the ledger commands")
struct LedgerRunnerTests {
    static let appleKey = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000123")
    static let googleKey = SubscriptionKey(store: .google, environment: .sandbox, storeID: "tok-9")

    let account = GetAccountResponse(
        accountID: "acct-1",
        subscriptions: [
            Subscription(
                key: appleKey, accountID: "acct-1", productID: "pro.monthly", productKind: .autoRenewable,
                state: .active, expiresTimeMilliseconds: 1_717_243_200_000, autoRenew: true,
                bundleOrPackage: "com.example.app"),
            Subscription(key: googleKey, productID: "pro.yearly", state: .gracePeriod),
        ],
        links: [
            AccountLink(
                accountID: "acct-1", key: appleKey, storeAccountRef: "7f9c", linkedTimeMilliseconds: 1_714_564_800_250)
        ])

    static func event(_ position: UInt64, _ kind: EventKind, storeTime: Int64) -> LifecycleEvent {
        LifecycleEvent(
            position: position, key: appleKey, kind: kind, storeTimeMilliseconds: storeTime, accountID: "acct-1",
            storeType: "DID_RENEW", notificationID: "n-\(position)", state: .active,
            rawPayload: "eyJhbGciOiJFUzI1NiJ9.payload.signature")
    }

    let failedEntry = InboxEntry(
        store: .apple, environment: .production, notificationID: "6a1f", notificationType: "DID_CHANGE_RENEWAL_STATUS",
        subtype: "AUTO_RENEW_DISABLED", receivedTimeMilliseconds: 1_714_638_600_000, status: .failed, attempts: 3,
        lastError: "ledger: UNAVAILABLE\nretrying", key: appleKey, rawPayload: "eyJ...")

    /// Runs `arguments` against `transport` and returns the printed output.
    func run(_ arguments: [String], _ transport: some BytesTransport) async throws(SubctlError) -> [String] {
        let output = Mutex<[String]>([])
        let runner = CommandRunner { text in output.withLock { $0.append(text) } }
        try await runner.run(try SubctlCommand.parse(arguments), transport: transport, standardInput: { "" })
        return output.withLock { $0 }
    }

    @Test func historyOfAKeyTheLedgerDoesNotHoldIsNotFoundNamingWhereToLook() async throws {
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/GetHistory": .success(GetHistoryResponse().serialized()),
            "subscriptions.ledger.v1.Ledger/GetSubscription": .failure(
                SubctlError(.rpc(.notFound), "no subscription")),
        ])
        do {
            _ = try await run(["history", "--key", "apple/production/2000000999", "--addr", "h:1"], transport)
            Issue.record("an unknown key printed a history")
        } catch {
            #expect(error.code == .rpc(.notFound))
            #expect(
                error.message
                    == "the ledger holds no subscription apple/production/2000000999: an App Store key is the "
                    + "original transaction id, a Google Play key the purchase token; `subctl find 2000000999` "
                    + "looks for it as any id, in both environments")
        }
        // A subscription with no events (yet) is said so.
        let held = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/GetHistory": .success(GetHistoryResponse().serialized()),
            "subscriptions.ledger.v1.Ledger/GetSubscription": .success(GetSubscriptionResponse().serialized()),
        ])
        #expect(
            try await run(["history", "--key", "apple/production/2000000123", "--addr", "h:1"], held) == ["no events"])
    }

    @Test func historyOfAnAccountTheLedgerDoesNotKnowIsNotFound() async throws {
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/GetHistory": .success(GetHistoryResponse().serialized()),
            "subscriptions.ledger.v1.Ledger/GetAccount": .failure(
                SubctlError(.rpc(.notFound), "no account \"alice\" in the ledger")),
        ])
        await #expect(throws: SubctlError(.rpc(.notFound), "no account \"alice\" in the ledger")) {
            _ = try await run(["history", "--account", "alice", "--addr", "h:1"], transport)
        }
    }

    @Test func aMethodTheServiceDoesNotServeNamesTheServiceThatDoes() {
        let error = SubctlError(
            RPCError(.unimplemented, "unknown method \"subscriptions.ledger.v1.Ledger/GetHistory\""))
        #expect(
            error.message
                == "unknown method \"subscriptions.ledger.v1.Ledger/GetHistory\"; the ledger serves it: is --addr the "
                + "ledger's address?")
        #expect(SubctlError(RPCError(.unimplemented, "not here")).message == "not here")
    }

    @Test func accountPrintsTheAccountThenSubscriptionsThenLinks() async throws {
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/GetAccount": .success(account.serialized())
        ])
        #expect(
            try await run(["account", "acct-1", "--addr", "h:1"], transport) == [
                "account acct-1",
                "subscription apple/production/2000000123 product pro.monthly state active"
                    + " expires 2024-06-01T12:00:00Z auto-renew yes account acct-1",
                "subscription google/sandbox/tok-9 product pro.yearly state grace_period expires -"
                    + " auto-renew no account -",
                "link apple/production/2000000123 account acct-1 linked 2024-05-01T12:00:00.250Z ref 7f9c",
            ])
        #expect(transport.calls.withLock { $0 } == ["subscriptions.ledger.v1.Ledger/GetAccount"])
        #expect(transport.requests.withLock { $0 } == [GetAccountRequest(accountID: "acct-1").serialized()])
    }

    @Test func accountJSONIsWhatCallPrints() async throws {
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/GetAccount": .success(account.serialized())
        ])
        let json = try await run(["account", "acct-1", "--json", "--addr", "h:1"], transport)
        #expect(
            json == [
                #"{"accountId":"acct-1","subscriptions":[{"key":{"store":"STORE_APPLE","environment":"#
                    + #""ENVIRONMENT_PRODUCTION","storeId":"2000000123"},"accountId":"acct-1","#
                    + #""productId":"pro.monthly","productKind":"PRODUCT_KIND_AUTO_RENEWABLE","#
                    + #""state":"SUBSCRIPTION_STATE_ACTIVE","#
                    + #""expiresTimeMs":"1717243200000","autoRenew":true,"bundleOrPackage":"com.example.app"},"#
                    + #"{"key":{"store":"STORE_GOOGLE","environment":"ENVIRONMENT_SANDBOX","storeId":"tok-9"},"#
                    + #""productId":"pro.yearly","state":"SUBSCRIPTION_STATE_GRACE_PERIOD"}],"links":[{"accountId":"#
                    + #""acct-1","key":{"store":"STORE_APPLE","environment":"ENVIRONMENT_PRODUCTION","storeId":"#
                    + #""2000000123"},"storeAccountRef":"7f9c","linkedTimeMs":"1714564800250"}]}"#
            ])
        #expect(
            try await run(["call", "GetAccount", #"{"accountId":"acct-1"}"#, "--json", "--addr", "h:1"], transport)
                == json)
        #expect(transport.requests.withLock { $0[0] == $0[1] })
    }

    @Test func historyPrintsOneLinePerEventWithoutThePayload() async throws {
        let page = GetHistoryResponse(
            events: [
                Self.event(42, .renewed, storeTime: 1_714_727_800_000),
                LifecycleEvent(position: 41, key: Self.googleKey, kind: .purchased),
            ], nextPageToken: "p2")
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/GetHistory": .success(page.serialized())
        ])
        #expect(
            try await run(
                ["history", "--key", "apple/production/2000000123", "--page-size", "2", "--addr", "h:1"], transport)
                == [
                    "#42 2024-05-03T09:16:40Z renewed state active type DID_RENEW/- account acct-1"
                        + " key apple/production/2000000123 notification n-42",
                    "#41 - purchased state - type -/- account - key google/sandbox/tok-9 notification -",
                    "more events: add --all to read every page",
                ])
        #expect(
            transport.requests.withLock { $0 }
                == [GetHistoryRequest(key: Self.appleKey, pageSize: 2).serialized()])

        let json = try await run(["history", "--account", "acct-1", "--json", "--addr", "h:1"], transport)
        #expect(
            json == [
                #"{"events":[{"position":"42","key":{"store":"STORE_APPLE","environment":"ENVIRONMENT_PRODUCTION","#
                    + #""storeId":"2000000123"},"kind":"EVENT_KIND_RENEWED","storeTimeMs":"1714727800000","#
                    + #""accountId":"acct-1","storeType":"DID_RENEW","notificationId":"n-42","#
                    + #""state":"SUBSCRIPTION_STATE_ACTIVE","rawPayload":"eyJhbGciOiJFUzI1NiJ9.payload.signature"},"#
                    + #"{"position":"41","key":{"store":"STORE_GOOGLE","environment":"ENVIRONMENT_SANDBOX","#
                    + #""storeId":"tok-9"},"kind":"EVENT_KIND_PURCHASED"}],"nextPageToken":"p2"}"#
            ])
        #expect(
            try await run(["call", "GetHistory", #"{"accountId":"acct-1"}"#, "--json", "--addr", "h:1"], transport)
                == json)
        #expect(transport.requests.withLock { $0[1] } == GetHistoryRequest(accountID: "acct-1").serialized())
    }

    @Test func historyAllFollowsThePageTokensToTheEnd() async throws {
        let transport = HistoryPagesTransport([
            "": GetHistoryResponse(
                events: [Self.event(5, .renewed, storeTime: 1_714_727_800_000)], nextPageToken: "after-5"),
            "after-5": GetHistoryResponse(
                events: [Self.event(4, .billingRecovered, storeTime: 1_714_727_700_000)], nextPageToken: "after-4"),
            "after-4": GetHistoryResponse(events: [Self.event(3, .purchased, storeTime: 1_714_638_600_000)]),
        ])
        #expect(
            try await run(["history", "--account", "acct-1", "--all", "--page-size", "1", "--addr", "h:1"], transport)
                == [
                    "#5 2024-05-03T09:16:40Z renewed state active type DID_RENEW/- account acct-1"
                        + " key apple/production/2000000123 notification n-5",
                    "#4 2024-05-03T09:15:00Z billing_recovered state active type DID_RENEW/- account acct-1"
                        + " key apple/production/2000000123 notification n-4",
                    "#3 2024-05-02T08:30:00Z purchased state active type DID_RENEW/- account acct-1"
                        + " key apple/production/2000000123 notification n-3",
                ])
        #expect(
            transport.requests.withLock { $0 } == [
                GetHistoryRequest(accountID: "acct-1", pageSize: 1),
                GetHistoryRequest(accountID: "acct-1", pageSize: 1, pageToken: "after-5"),
                GetHistoryRequest(accountID: "acct-1", pageSize: 1, pageToken: "after-4"),
            ])

        let json = try await run(["history", "--account", "acct-1", "--all", "--json", "--addr", "h:1"], transport)
        #expect(json.count == 3)
        #expect(json[0].hasSuffix(#""nextPageToken":"after-5"}"#))
        #expect(json[2].hasPrefix(#"{"events":[{"position":"3","#) && !json[2].contains("nextPageToken"))
    }

    @Test func historyAllStopsAtTheCap() async throws {
        let page = GetHistoryResponse(
            events: [Self.event(7, .renewed, storeTime: 1_714_727_800_000)], nextPageToken: "t")
        let transport = HistoryPagesTransport(["": page, "t": page])
        let printed = Mutex<[String]>([])
        let runner = CommandRunner { text in printed.withLock { $0.append(text) } }
        let command = try SubctlCommand.parse(["history", "--account", "acct-1", "--all", "--addr", "h:1"])
        let error = await #expect(throws: SubctlError.self) {
            try await runner.run(command, transport: transport, standardInput: { "" })
        }
        #expect(
            error.map(OutputText.error)
                == "error: INCOMPLETE: stopped after 100 pages of history; more remain (--page-size 500 reads more)")
        #expect(error?.code.exitCode == 1)
        #expect(LedgerCommand.maximumPages == 100)
        #expect(transport.requests.withLock { $0.count } == 100)
        #expect(printed.withLock { $0.count } == 100)
    }

    @Test func emptyAnswersSaySo() async throws {
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/GetHistory": .success([]),
            "subscriptions.ledger.v1.Ledger/ListInbox": .success([]),
            // An account the ledger knows, with no events yet.
            "subscriptions.ledger.v1.Ledger/GetAccount": .success(GetAccountResponse(accountID: "nobody").serialized()),
        ])
        #expect(
            try await run(["history", "--account", "nobody", "--all", "--addr", "h:1"], transport) == ["no events"])
        #expect(try await run(["inbox", "--addr", "h:1"], transport) == ["no entries"])
        #expect(try await run(["history", "--account", "nobody", "--json", "--addr", "h:1"], transport) == ["{}"])
        #expect(try await run(["inbox", "--json", "--addr", "h:1"], transport) == ["{}"])
    }

    @Test func inboxPrintsOneLinePerEntry() async throws {
        let page = ListInboxResponse(
            entries: [
                failedEntry,
                InboxEntry(
                    store: .google, notificationID: "1234567890", notificationType: "SUBSCRIPTION_RENEWED",
                    receivedTimeMilliseconds: 1_714_727_700_000, status: .pending),
            ], nextPageToken: "more")
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/ListInbox": .success(page.serialized())
        ])
        #expect(
            try await run(["inbox", "--store", "apple", "--page-size", "2", "--addr", "h:1"], transport) == [
                "apple 6a1f DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED failed attempts 3"
                    + " received 2024-05-02T08:30:00Z error ledger: UNAVAILABLE retrying",
                "google 1234567890 SUBSCRIPTION_RENEWED/- pending attempts 0 received 2024-05-03T09:15:00Z error -",
                "more entries: raise --page-size (at most 500)",
            ])
        #expect(
            try await run(["inbox", "--status", "failed", "--json", "--addr", "h:1"], transport) == [
                #"{"entries":[{"store":"STORE_APPLE","environment":"ENVIRONMENT_PRODUCTION","notificationId":"6a1f","#
                    + #""notificationType":"DID_CHANGE_RENEWAL_STATUS","subtype":"AUTO_RENEW_DISABLED","#
                    + #""receivedTimeMs":"1714638600000","status":"INBOX_STATUS_FAILED","attempts":3,"#
                    + #""lastError":"ledger: UNAVAILABLE\nretrying","key":{"store":"STORE_APPLE","#
                    + #""environment":"ENVIRONMENT_PRODUCTION","storeId":"2000000123"},"rawPayload":"eyJ..."},"#
                    + #"{"store":"STORE_GOOGLE","notificationId":"1234567890","notificationType":"#
                    + #""SUBSCRIPTION_RENEWED","receivedTimeMs":"1714727700000","status":"INBOX_STATUS_PENDING"}],"#
                    + #""nextPageToken":"more"}"#
            ])
        #expect(
            transport.requests.withLock { $0 } == [
                ListInboxRequest(store: .apple, pageSize: 2).serialized(),
                ListInboxRequest(status: .failed).serialized(),
            ])
    }

    @Test func replayPrintsTheEntryAfterwards() async throws {
        let replayed = MarkInboxResponse(entry: failedEntry)
        let transport = FakeTransport(answers: [
            "subscriptions.ledger.v1.Ledger/ReplayInbox": .success(replayed.serialized())
        ])
        #expect(
            try await run(["replay", "apple", "6a1f", "--addr", "h:1"], transport) == [
                "apple 6a1f DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED failed attempts 3"
                    + " received 2024-05-02T08:30:00Z error ledger: UNAVAILABLE retrying"
            ])
        let json = try await run(["replay", "apple", "6a1f", "--json", "--addr", "h:1"], transport)
        #expect(
            try await run(
                [
                    "call", "ReplayInbox", #"{"store":"STORE_APPLE","notificationId":"6a1f"}"#, "--json", "--addr",
                    "h:1",
                ],
                transport) == json)
        #expect(json.first?.hasPrefix(#"{"entry":{"store":"STORE_APPLE","environment":"#) == true)
        let request = ReplayInboxRequest(store: .apple, notificationID: "6a1f").serialized()
        #expect(transport.requests.withLock { $0 } == [request, request, request])

        let empty = FakeTransport(answers: ["subscriptions.ledger.v1.Ledger/ReplayInbox": .success([])])
        let error = await #expect(throws: SubctlError.self) {
            try await run(["replay", "apple", "6a1f", "--addr", "h:1"], empty)
        }
        #expect(
            error?.description == "DATA_LOSS: subscriptions.ledger.v1.Ledger/ReplayInbox answered without the entry")
    }

    @Test(arguments: [
        ["account", "acct-1", "--addr", "h:1"],
        ["history", "--account", "acct-1", "--all", "--addr", "h:1"],
        ["inbox", "--json", "--addr", "h:1"],
        ["replay", "google", "1234567890", "--addr", "h:1"],
    ])
    func unimplementedIsAnErrorWithExitOne(arguments: [String]) async throws {
        let transport = FakeTransport()
        let printed = Mutex<[String]>([])
        let runner = CommandRunner { text in printed.withLock { $0.append(text) } }
        let command = try SubctlCommand.parse(arguments)
        let error = await #expect(throws: SubctlError.self) {
            try await runner.run(command, transport: transport, standardInput: { "" })
        }
        let method = try #require(transport.calls.withLock { $0 }.first)
        #expect(transport.calls.withLock { $0 } == [method])
        #expect(error.map(OutputText.error) == "error: UNIMPLEMENTED: unknown method \(method)")
        #expect(error?.code.exitCode == 1)
        #expect(printed.withLock { $0 }.isEmpty)
    }

    @Test func undecodableAnswersAreDataLoss() async throws {
        let transport = FakeTransport(answers: ["subscriptions.ledger.v1.Ledger/GetAccount": .success([0x0a])])
        let error = await #expect(throws: SubctlError.self) {
            try await run(["account", "acct-1", "--addr", "h:1"], transport)
        }
        #expect(
            error?.description
                == "DATA_LOSS: payload is not a valid subscriptions.ledger.v1.GetAccountResponse:"
                + " truncated length of field 1 at byte 0")
        #expect(error?.code.exitCode == 1)
    }

    @Test(
        arguments: [
            (nil, "-"),
            (0, "1970-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (1_714_564_800_250, "2024-05-01T12:00:00.250Z"),
            (951_782_400_000, "2000-02-29T00:00:00Z"),
            (4_107_628_799_000, "2100-03-01T23:59:59Z"),
            (-62_135_596_800_000, "0001-01-01T00:00:00Z"),
        ] as [(Int64?, String)])
    func timesAreISO8601UTC(milliseconds: Int64?, expected: String) {
        #expect(OutputText.time(milliseconds) == expected)
    }
}
