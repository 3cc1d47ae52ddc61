import Crypto
import Foundation
import HTTP
import HTTPClient
import TestSupport
import Testing

@testable import GooglePlay

/// The Play Developer API client against a fake OAuth endpoint and a fake Play Developer API
/// over real HTTP on 127.0.0.1.
@Suite("Google Play Developer API client")
struct GooglePlayDeveloperAPIClientTests {
    /// The error `subscriptionsv2.get` of the test token ends in; a failed expectation, at the
    /// caller's line, when it does not fail so.
    static func subscriptionError(
        _ client: GooglePlayDeveloperAPIClient, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> GooglePlayAPIError? {
        await #expect(throws: GooglePlayAPIError.self, sourceLocation: sourceLocation) {
            try await client.subscription(packageName: Self.packageName, token: Self.token)
        }
    }

    static let packageName = GooglePlayHarness.packageName
    /// A purchase token shaped like Google's: letters, then `.`, `-` and `_` in the opaque part.
    static let token = "lgmmicancjpmkconmddnaicb.AO-J1OyZa0o1Xez6T7kCcaIpqyIKzt5n1D_cTEFQhHJzVKw4INw2cMmckgE-ME0D"
    static let subscriptionPath = GooglePlayHarness.path("/purchases/subscriptionsv2/tokens/\(token)")
    static let productPath = GooglePlayHarness.path("/purchases/products/coins_100/tokens/\(token)")

    /// A `subscriptionsv2.get` body: the real one from the shared fixtures when they are present
    /// (with the package name and token of its notification), else the same answer inline.
    static func subscriptionAnswer() throws -> (packageName: String, token: String, body: String) {
        if GoogleFixtures.available {
            let fixture = try #require(
                try JSONSerialization.jsonObject(
                    with: try GoogleFixtures.data("subscriptionsv2/01_rtdn4_PURCHASED__ACTIVE.json")) as? [String: Any])
            let notification = try #require(fixture["developerNotification"] as? [String: Any])
            let subscription = try #require(notification["subscriptionNotification"] as? [String: Any])
            let body = try JSONSerialization.data(withJSONObject: try #require(fixture["subscriptionsv2_get_response"]))
            return (
                try #require(notification["packageName"] as? String),
                try #require(subscription["purchaseToken"] as? String), String(decoding: body, as: UTF8.self)
            )
        }
        return (
            "network.loki.messenger",
            "lgmmicancjpmkconmddnaicb.AO-J1OyZa0o1Xez6T7kCcaIpqyIKzt5n1D_cTEFQhHJzVKw4INw2cMmckgE-ME0DgO1xJuFAYDuiYuM-Sy87HLQ8qvitpiMGrMnu1iL_-yvAYc4CoAx8u_Q",
            #"""
            {"kind":"androidpublisher#subscriptionPurchaseV2","startTime":"2025-10-06T03:58:10.981Z","regionCode":"AU",
             "subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","latestOrderId":"GPA.3354-3745-5570-25336",
             "testPurchase":{},"acknowledgementState":"ACKNOWLEDGEMENT_STATE_PENDING",
             "externalAccountIdentifiers":{"obfuscatedExternalAccountId":"account-1"},
             "lineItems":[{"productId":"session_pro","expiryTime":"2025-10-06T04:03:10.613Z",
               "autoRenewingPlan":{"autoRenewEnabled":true,
                 "recurringPrice":{"currencyCode":"AUD","units":"16","nanos":990000000}},
               "offerDetails":{"basePlanId":"session-pro-1-month","offerTags":["one-month"]},
               "latestSuccessfulOrderId":"GPA.3354-3745-5570-25336"}]}
            """#
        )
    }

    static let activeSubscription = HTTPResponse.json(
        #"{"subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","lineItems":[{"productId":"premium"}]}"#)

    /// The error's description, for checking no credential or token shows.
    static func text(_ error: GooglePlayAPIError?) throws -> String { String(describing: try #require(error)) }

    // MARK: Calls

    @Test("subscriptionsv2.get decodes Google's answer, with a bearer token from the token endpoint")
    func subscription() async throws {
        let harness = try GooglePlayHarness()
        let (packageName, token, body) = try Self.subscriptionAnswer()
        let path = "/androidpublisher/v3/applications/\(packageName)/purchases/subscriptionsv2/tokens/\(token)"
        harness.api.answer("GET", path, .json(body))
        let client = try harness.client()

        let purchase = try await client.subscription(packageName: packageName, token: token)

        #expect(purchase.kind == "androidpublisher#subscriptionPurchaseV2")
        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(purchase.startTime == "2025-10-06T03:58:10.981Z")
        #expect(purchase.regionCode == "AU")
        #expect(purchase.latestOrderId == "GPA.3354-3745-5570-25336")
        #expect(purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_PENDING")
        #expect(purchase.testPurchase == SubscriptionPurchaseV2.Empty())
        #expect(purchase.linkedPurchaseToken == nil)
        let item = try #require(purchase.lineItems?.first)
        #expect(purchase.lineItems?.count == 1)
        #expect(item.productId == "session_pro")
        #expect(item.expiryTime == "2025-10-06T04:03:10.613Z")
        #expect(item.autoRenewingPlan?.autoRenewEnabled == true)
        #expect(item.offerDetails?.basePlanId == "session-pro-1-month")
        #expect(item.offerDetails?.offerTags == ["one-month"])
        #expect(item.latestSuccessfulOrderId == "GPA.3354-3745-5570-25336")
        let requests = harness.api.requests
        #expect(requests.map(\.method) == ["GET"])
        #expect(requests.map(\.path) == [path])
        #expect(requests[0].token == "ya29.fake-access-token-1")
        #expect(requests[0].authorized)
        #expect(requests[0].headers["accept"] == "application/json")
        #expect(harness.oauth.exchanges.map(\.refusal) == [nil])
    }

    @Test("one access token serves many calls")
    func accessTokenIsReused() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer("GET", Self.subscriptionPath, Self.activeSubscription)
        let client = try harness.client()

        for _ in 0..<3 { _ = try await client.subscription(packageName: Self.packageName, token: Self.token) }

        #expect(harness.api.requests.map(\.token) == Array(repeating: "ya29.fake-access-token-1", count: 3))
        #expect(harness.oauth.exchanges.count == 1)
    }

    @Test("subscriptions.acknowledge posts {} to the exact path")
    func acknowledgeSubscription() async throws {
        let harness = try GooglePlayHarness()
        let path = GooglePlayHarness.path("/purchases/subscriptions/premium_monthly/tokens/\(Self.token):acknowledge")
        harness.api.answer("POST", path, HTTPResponse(status: 200))
        let client = try harness.client()

        try await client.acknowledgeSubscription(
            packageName: Self.packageName, subscriptionID: "premium_monthly", token: Self.token)

        let requests = harness.api.requests
        #expect(requests.map(\.method) == ["POST"])
        #expect(requests.map(\.path) == [path])
        #expect(requests[0].body == Array("{}".utf8))
        #expect(requests[0].headers["content-type"] == "application/json")
        #expect(requests[0].authorized)
    }

    @Test("products.get decodes a one-time purchase")
    func productPurchase() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.productPath,
            .json(
                #"""
                {"kind":"androidpublisher#productPurchase","purchaseTimeMillis":"1750000000123","purchaseState":0,
                 "consumptionState":0,"developerPayload":"","orderId":"GPA.3312-0123-4567-89012","purchaseType":0,
                 "acknowledgementState":0,"productId":"coins_100","quantity":2,"regionCode":"DE",
                 "obfuscatedExternalAccountId":"account-7"}
                """#))
        let client = try harness.client()

        let purchase = try await client.productPurchase(
            packageName: Self.packageName, productID: "coins_100", token: Self.token)

        var expected = ProductPurchase()
        expected.kind = "androidpublisher#productPurchase"
        expected.purchaseTimeMillis = "1750000000123"
        expected.purchaseState = 0
        expected.consumptionState = 0
        expected.orderId = "GPA.3312-0123-4567-89012"
        expected.purchaseType = 0
        expected.acknowledgementState = 0
        expected.productId = "coins_100"
        expected.quantity = 2
        expected.regionCode = "DE"
        expected.obfuscatedExternalAccountId = "account-7"
        // The answer is also kept as Google sent it, for audit.
        expected.raw = purchase.raw
        #expect(purchase == expected)
        #expect(purchase.raw?.contains(#""orderId":"GPA.3312-0123-4567-89012""#) == true)
        #expect(harness.api.requests.map(\.method) == ["GET"])
    }

    @Test("products.acknowledge posts {} and products.consume posts to their exact paths")
    func acknowledgeAndConsumeProduct() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer("POST", Self.productPath + ":acknowledge", HTTPResponse(status: 200))
        harness.api.answer("POST", Self.productPath + ":consume", HTTPResponse(status: 204))
        let client = try harness.client()

        try await client.acknowledgeProduct(packageName: Self.packageName, productID: "coins_100", token: Self.token)
        try await client.consumeProduct(packageName: Self.packageName, productID: "coins_100", token: Self.token)

        let requests = harness.api.requests
        #expect(requests.map(\.method) == ["POST", "POST"])
        #expect(requests.map(\.path) == [Self.productPath + ":acknowledge", Self.productPath + ":consume"])
        #expect(requests[0].body == Array("{}".utf8))
        #expect(requests.map(\.authorized) == [true, true])
    }

    @Test("voidedpurchases.list follows nextPageToken over three pages and keeps Google's order")
    func voidedPurchasesPagination() async throws {
        let harness = try GooglePlayHarness()
        let path = GooglePlayHarness.path("/purchases/voidedpurchases")
        harness.api.answer("GET", path) { request in
            func entry(_ n: Int) -> String {
                #"{"kind":"androidpublisher#voidedPurchase","purchaseToken":"token-\#(n)","orderId":"GPA.\#(n)","#
                    + #""voidedTimeMillis":"17500000\#(n)","voidedSource":1,"voidedReason":\#(n % 8)}"#
            }
            switch request.query["token"] {
            case nil:
                return .json(
                    #"{"pageInfo":{"totalResults":2,"resultPerPage":1000},"tokenPagination":{"nextPageToken":"page-2"},"voidedPurchases":[\#(entry(1)),\#(entry(2))]}"#
                )
            case "page-2":
                return .json(
                    #"{"tokenPagination":{"nextPageToken":"page-3"},"voidedPurchases":[\#(entry(3))]}"#)
            default:
                return .json(#"{"tokenPagination":{},"voidedPurchases":[\#(entry(4)),\#(entry(5))]}"#)
            }
        }
        let client = try harness.client()
        let start = Date(timeIntervalSince1970: 1_749_000_000.5)
        let end = Date(timeIntervalSince1970: 1_750_000_000)

        let voided = try await client.voidedPurchases(packageName: Self.packageName, start: start, end: end)

        #expect(voided.map(\.purchaseToken) == (1...5).map { "token-\($0)" })
        #expect(voided.map(\.orderId) == (1...5).map { "GPA.\($0)" })
        #expect(voided[2].voidedReason == 3)
        #expect(voided[2].voidedSource == 1)
        let requests = harness.api.requests
        #expect(requests.map(\.path) == [path, path, path])
        let base = [
            "startTime": "1749000000500", "endTime": "1750000000000", "type": "1", "maxResults": "1000",
            "includeQuantityBasedPartialRefund": "true",
        ]
        #expect(voided[2].raw?.contains(#""orderId":"GPA.3""#) == true)
        #expect(
            requests.map(\.query) == [
                base, base.merging(["token": "page-2"]) { $1 }, base.merging(["token": "page-3"]) { $1 },
            ])
    }

    @Test("an empty voided purchases answer is an empty list")
    func noVoidedPurchases() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer("GET", GooglePlayHarness.path("/purchases/voidedpurchases"), .json("{}"))
        let client = try harness.client()

        let voided = try await client.voidedPurchases(
            packageName: Self.packageName, start: GooglePlayHarness.start.addingTimeInterval(-86400),
            end: GooglePlayHarness.start)

        #expect(voided.isEmpty)
    }

    @Test("a page token that comes back again, or more pages than allowed, is .invalidResponse")
    func voidedPurchasesLoops() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", GooglePlayHarness.path("/purchases/voidedpurchases"),
            .json(#"{"tokenPagination":{"nextPageToken":"same"},"voidedPurchases":[]}"#))
        harness.api.answer("GET", "/androidpublisher/v3/applications/com.example.endless/purchases/voidedpurchases") {
            request in
            let next = Int(request.query["token"] ?? "0")! + 1
            return .json(#"{"tokenPagination":{"nextPageToken":"\#(next)"}}"#)
        }
        let client = try harness.client { $0.maxVoidedPurchasePages = 5 }
        let start = GooglePlayHarness.start.addingTimeInterval(-86400)

        let looping = await #expect(throws: GooglePlayAPIError.self) {
            try await client.voidedPurchases(packageName: Self.packageName, start: start, end: GooglePlayHarness.start)
        }
        let endless = await #expect(throws: GooglePlayAPIError.self) {
            try await client.voidedPurchases(
                packageName: "com.example.endless", start: start, end: GooglePlayHarness.start)
        }

        #expect(
            looping
                == GooglePlayAPIError(
                    .invalidResponse,
                    "purchases.voidedpurchases.list for \(Self.packageName) repeated a page token it had sent before"))
        #expect(
            endless
                == GooglePlayAPIError(
                    .invalidResponse, "purchases.voidedpurchases.list for com.example.endless has more than 5 pages"))
        #expect(harness.api.requests.count == 2 + 5)
    }

    // MARK: Access tokens

    @Test("a 401 drops the access token and the call is repeated once with a new one")
    func unauthorizedRenewsTheAccessToken() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer("GET", Self.subscriptionPath, Self.activeSubscription)
        let client = try harness.client()
        _ = try await client.subscription(packageName: Self.packageName, token: Self.token)
        harness.api.refuse("ya29.fake-access-token-1")

        let purchase = try await client.subscription(packageName: Self.packageName, token: Self.token)

        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        let requests = harness.api.requests
        #expect(
            requests.map(\.token) == [
                "ya29.fake-access-token-1", "ya29.fake-access-token-1", "ya29.fake-access-token-2",
            ])
        #expect(requests.map(\.authorized) == [true, false, true])
        #expect(harness.oauth.exchanges.count == 2)
        #expect(harness.sleeper.requested.isEmpty)
    }

    @Test("a 401 with the new access token too is .unauthorized, and the error shows no token")
    func unauthorizedTwice() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer("GET", Self.subscriptionPath, Self.activeSubscription)
        harness.api.refuse("ya29.fake-access-token-1")
        harness.api.refuse("ya29.fake-access-token-2")
        let client = try harness.client()

        let error = await Self.subscriptionError(client)

        #expect(
            error
                == GooglePlayAPIError(
                    .unauthorized,
                    "purchases.subscriptionsv2.get for \(Self.packageName): Request had invalid authentication credentials.",
                    httpStatus: 401))
        #expect(harness.api.requests.count == 2)
        #expect(harness.oauth.exchanges.count == 2)
        let text = try Self.text(error)
        #expect(!text.contains("ya29"))
        #expect(!text.contains(Self.token))
    }

    @Test("a 403 (no permission for the app) is .unauthorized at once, without a new access token")
    func forbidden() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.subscriptionPath,
            FakePlayDeveloperAPI.error(
                403, "The current user has insufficient permissions to perform the requested operation.",
                "PERMISSION_DENIED"))
        let client = try harness.client()

        let error = await Self.subscriptionError(client)

        #expect(error?.code == .unauthorized)
        #expect(error?.httpStatus == 403)
        #expect(harness.api.requests.count == 1)
        #expect(harness.oauth.exchanges.count == 1)
    }

    @Test("a refused assertion is .unauthorized before any API request")
    func refusedAssertion() async throws {
        let harness = try GooglePlayHarness(serverKey: try TestRSAKeys.key(5))
        harness.api.answer("GET", Self.subscriptionPath, Self.activeSubscription)
        let client = try harness.client()

        let error = await Self.subscriptionError(client)

        #expect(error?.code == .unauthorized)
        #expect(error?.httpStatus == 400)
        #expect(harness.api.requests.isEmpty)
        #expect(harness.oauth.exchanges.count == 1)
        #expect(harness.sleeper.requested.isEmpty)
    }

    @Test("a token endpoint that answers 503 is waited for like the API, then the call goes through")
    func tokenEndpointUnavailable() async throws {
        let harness = try GooglePlayHarness()
        harness.oauth.fail(with: HTTPResponse(status: 503))
        harness.api.answer("GET", Self.subscriptionPath, Self.activeSubscription)
        let client = try harness.client()

        _ = try await client.subscription(packageName: Self.packageName, token: Self.token)

        #expect(harness.oauth.exchanges.count == 2)
        #expect(harness.api.requests.map(\.token) == ["ya29.fake-access-token-1"])
        #expect(harness.sleeper.requested.count == 1)
    }

    // MARK: Not found and gone

    @Test("a brand-new token that answers 404 twice, then 200, succeeds after two short waits")
    func notFoundThenFound() async throws {
        let harness = try GooglePlayHarness()
        let notFound = FakePlayDeveloperAPI.error(404, "The purchase token was not found.", "NOT_FOUND")
        harness.api.answer("GET", Self.subscriptionPath, notFound, notFound, Self.activeSubscription)
        let client = try harness.client()

        let purchase = try await client.subscription(packageName: Self.packageName, token: Self.token)

        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(harness.api.requests.count == 3)
        #expect(harness.sleeper.requested == [.milliseconds(750), .milliseconds(750)])
    }

    @Test("a token that answers 404 every time is .notFound after three tries over 1.5 s")
    func notFoundEveryTime() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.productPath, FakePlayDeveloperAPI.error(404, "The purchase token was not found.", "NOT_FOUND"))
        let client = try harness.client()

        let error = await #expect(throws: GooglePlayAPIError.self) {
            try await client.productPurchase(packageName: Self.packageName, productID: "coins_100", token: Self.token)
        }

        #expect(
            error
                == GooglePlayAPIError(
                    .notFound,
                    "purchases.products.get of coins_100 for \(Self.packageName): The purchase token was not found.",
                    httpStatus: 404))
        #expect(harness.api.requests.count == 3)
        #expect(harness.sleeper.requested == [.milliseconds(750), .milliseconds(750)])
        #expect(!(try Self.text(error)).contains(Self.token))
    }

    @Test("a 404 on acknowledge is .notFound at once")
    func notFoundOnAcknowledge() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer("POST", Self.productPath + ":acknowledge", HTTPResponse(status: 404))
        let client = try harness.client()

        let error = await #expect(throws: GooglePlayAPIError.self) {
            try await client.acknowledgeProduct(
                packageName: Self.packageName, productID: "coins_100", token: Self.token)
        }

        #expect(error?.code == .notFound)
        #expect(harness.api.requests.count == 1)
        #expect(harness.sleeper.requested.isEmpty)
    }

    @Test("a 410 is .gone at once")
    func gone() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.subscriptionPath,
            FakePlayDeveloperAPI.error(410, "The subscription purchase is no longer available for query.", "GONE"))
        let client = try harness.client()

        let error = await Self.subscriptionError(client)

        #expect(error?.code == .gone)
        #expect(error?.httpStatus == 410)
        #expect(harness.api.requests.count == 1)
        #expect(harness.sleeper.requested.isEmpty)
    }

    // MARK: Retries

    @Test("a 429 with Retry-After is retried after exactly that wait, then succeeds")
    func rateLimitHonoursRetryAfter() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.subscriptionPath,
            HTTPResponse(
                status: 429, headers: [("Content-Type", "application/json"), ("Retry-After", "7")],
                body: Array(#"{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED"}}"#.utf8)),
            Self.activeSubscription)
        let client = try harness.client()

        let purchase = try await client.subscription(packageName: Self.packageName, token: Self.token)

        #expect(purchase.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(harness.api.requests.count == 2)
        #expect(harness.sleeper.requested == [.seconds(7)])
    }

    @Test("500 on every attempt fails .server after exactly maxAttempts requests, with full-jitter waits")
    func serverErrorAfterMaxAttempts() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.subscriptionPath, FakePlayDeveloperAPI.error(500, "Internal error encountered.", "INTERNAL"))
        let client = try harness.client()
        #expect(client.configuration.maxAttempts == 4)

        let error = await Self.subscriptionError(client)

        #expect(
            error
                == GooglePlayAPIError(
                    .server, "purchases.subscriptionsv2.get for \(Self.packageName): Internal error encountered.",
                    httpStatus: 500))
        #expect(harness.api.requests.count == 4)
        let waits = harness.sleeper.requested
        #expect(waits.count == 3)
        #expect(zip(waits, [500, 1000, 2000]).allSatisfy { $0 >= .zero && $0 <= .milliseconds($1) })
    }

    @Test("a 400 is .invalidRequest with Google's message, trimmed, and is not retried")
    func badRequestIsNotRetried() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.subscriptionPath, FakePlayDeveloperAPI.error(400, "  Invalid Value\\n", "INVALID_ARGUMENT"))
        let client = try harness.client()

        let error = await Self.subscriptionError(client)

        #expect(
            error
                == GooglePlayAPIError(
                    .invalidRequest, "purchases.subscriptionsv2.get for \(Self.packageName): Invalid Value",
                    httpStatus: 400))
        #expect(harness.api.requests.count == 1)
        #expect(harness.sleeper.requested.isEmpty)
    }

    @Test("a refused connection is .network after maxAttempts tries")
    func connectionRefusedIsNetwork() async throws {
        let harness = try GooglePlayHarness()
        let held = try HeldPort()
        let client = try harness.client { $0.baseURL = held.url }

        let error = await Self.subscriptionError(client)
        withExtendedLifetime(held) {}

        #expect(
            error
                == GooglePlayAPIError(
                    .network, "purchases.subscriptionsv2.get for \(Self.packageName): connection refused"))
        #expect(harness.sleeper.requested.count == 3)
        #expect(harness.oauth.exchanges.count == 1)
    }

    @Test("a sleeper that throws (a cancelled task) ends the call with .network and no further request")
    func cancelledWaitEndsTheCall() async throws {
        let harness = try GooglePlayHarness(sleeper: RecordingSleeper(failing: true))
        harness.api.answer("GET", Self.subscriptionPath, HTTPResponse(status: 503), Self.activeSubscription)
        let client = try harness.client()

        let error = await Self.subscriptionError(client)

        #expect(error?.code == .network)
        #expect(harness.api.requests.count == 1)
    }

    // MARK: Requests refused before sending

    @Test("purchase tokens are percent-encoded into one path segment; ., - and _ stay as they are")
    func tokenEncoding() throws {
        #expect(try GooglePlayDeveloperAPIClient.tokenSegment("abc.DEF-ghi_JKL~0") == "abc.DEF-ghi_JKL~0")
        #expect(try GooglePlayDeveloperAPIClient.tokenSegment("a/b c?d#e:f%") == "a%2Fb%20c%3Fd%23e%3Af%25")
        #expect(try GooglePlayDeveloperAPIClient.productSegment("coins.100", what: "product id") == "coins.100")
    }

    @Test("a token of exactly 4096 bytes is sent; an empty, longer or dot-segment token is refused unsent")
    func tokenLimits() async throws {
        let harness = try GooglePlayHarness()
        let longest = String(repeating: "a.b-c_", count: 682) + "dddd"
        #expect(longest.utf8.count == 4096)
        harness.api.answer(
            "GET", GooglePlayHarness.path("/purchases/subscriptionsv2/tokens/\(longest)"), Self.activeSubscription)
        let client = try harness.client()

        _ = try await client.subscription(packageName: Self.packageName, token: longest)
        for (token, message) in [
            ("", "the purchase token is empty"), (longest + "e", "the purchase token is longer than 4096 bytes"),
            ("..", "the purchase token is a dot segment"),
        ] {
            await #expect(throws: GooglePlayAPIError(.invalidRequest, message)) {
                try await client.subscription(packageName: Self.packageName, token: token)
            }
        }

        #expect(harness.api.requests.count == 1)
        #expect(harness.oauth.exchanges.count == 1)
    }

    @Test(
        "a package name that is not an Android application id is refused before any request",
        arguments: [
            "", "example", "com..example", "1com.example", "com.example.", "com.exa mple", "com/evil.app",
            "com.example%2F..", String(repeating: "a.", count: 128) + "b",
        ])
    func badPackageNames(_ packageName: String) async throws {
        let harness = try GooglePlayHarness()
        let client = try harness.client()

        let error = await #expect(throws: GooglePlayAPIError.self) {
            try await client.acknowledgeSubscription(
                packageName: packageName, subscriptionID: "premium", token: Self.token)
        }

        #expect(error?.code == .invalidRequest)
        #expect(harness.api.requests.isEmpty)
        #expect(harness.oauth.exchanges.isEmpty)
    }

    @Test("an empty product id and a range that does not start before it ends are refused unsent")
    func otherBadArguments() async throws {
        let harness = try GooglePlayHarness()
        let client = try harness.client()

        await #expect(throws: GooglePlayAPIError(.invalidRequest, "the product id is empty")) {
            try await client.consumeProduct(packageName: Self.packageName, productID: "", token: Self.token)
        }
        await #expect(throws: GooglePlayAPIError(.invalidRequest, "the subscription id is empty")) {
            try await client.acknowledgeSubscription(
                packageName: Self.packageName, subscriptionID: "", token: Self.token)
        }
        await #expect(
            throws: GooglePlayAPIError(.invalidRequest, "the voided purchases range must start before it ends")
        ) {
            try await client.voidedPurchases(
                packageName: Self.packageName, start: GooglePlayHarness.start, end: GooglePlayHarness.start)
        }

        #expect(harness.api.requests.isEmpty)
        #expect(harness.oauth.exchanges.isEmpty)
    }

    // MARK: Hostile answers

    @Test("a 200 whose body is not the documented JSON is .invalidResponse naming the field")
    func undecodableSuccess() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer("GET", Self.subscriptionPath, .json(#"{"lineItems":[{"productId":7}]}"#))
        harness.api.answer("GET", Self.productPath, .text("<html>maintenance</html>"))
        let client = try harness.client()

        let mistyped = await #expect(throws: GooglePlayAPIError.self) {
            try await client.subscription(packageName: Self.packageName, token: Self.token)
        }
        let garbage = await #expect(throws: GooglePlayAPIError.self) {
            try await client.productPurchase(packageName: Self.packageName, productID: "coins_100", token: Self.token)
        }

        #expect(
            mistyped
                == GooglePlayAPIError(
                    .invalidResponse,
                    "the answer to purchases.subscriptionsv2.get for \(Self.packageName) has a lineItems[0].productId of the wrong type",
                    httpStatus: 200))
        #expect(
            garbage
                == GooglePlayAPIError(
                    .invalidResponse,
                    "the answer to purchases.products.get of coins_100 for \(Self.packageName) is not a JSON object",
                    httpStatus: 200))
    }

    @Test("a body over maxResponseBytes is .invalidResponse and not retried")
    func oversizedBody() async throws {
        let harness = try GooglePlayHarness()
        let padding = String(repeating: "x", count: 4096)
        harness.api.answer("GET", Self.subscriptionPath, .json(#"{"kind":"\#(padding)"}"#))
        let client = try harness.client { $0.maxResponseBytes = 1024 }

        let error = await Self.subscriptionError(client)

        #expect(
            error
                == GooglePlayAPIError(
                    .invalidResponse,
                    "purchases.subscriptionsv2.get for \(Self.packageName): the answer is longer than 1024 bytes"))
        #expect(harness.api.requests.count == 1)
    }

    @Test("a redirect is not followed: the access token never reaches the other URL")
    func redirectIsNotFollowed() async throws {
        let harness = try GooglePlayHarness()
        harness.api.answer(
            "GET", Self.subscriptionPath,
            HTTPResponse(status: 302, headers: [("Location", harness.oauth.tokenURL.absoluteString)]))
        let client = try harness.client()

        let error = await Self.subscriptionError(client)

        #expect(error?.code == .invalidResponse)
        #expect(error?.httpStatus == 302)
        #expect(harness.oauth.exchanges.map(\.grantType) == ["urn:ietf:params:oauth:grant-type:jwt-bearer"])
    }

    // MARK: Configuration

    @Test("the defaults are Google's URL and the documented retries and bounds; bad settings are refused")
    func configuration() throws {
        let harness = try GooglePlayHarness()
        let defaults = GooglePlayDeveloperAPIClient.Configuration(serviceAccount: harness.account)
        #expect(defaults.baseURL.absoluteString == "https://androidpublisher.googleapis.com")
        #expect(defaults.tokenURL == nil)
        #expect(defaults.requestTimeout == .seconds(15))
        #expect(defaults.maxAttempts == 4)
        #expect(defaults.baseBackoff == .milliseconds(500))
        #expect(defaults.maxBackoff == .seconds(30))
        #expect(defaults.notFoundAttempts == 3)
        #expect(defaults.notFoundRetryDelay == .milliseconds(750))
        #expect(defaults.accessTokenRenewalMargin == .seconds(300))
        #expect(defaults.maxResponseBytes == 4 << 20)
        #expect(defaults.maxVoidedPurchasePages == 100)
        let client = try GooglePlayDeveloperAPIClient(configuration: defaults)
        #expect(client.tokenSource.tokenURL.absoluteString == "https://oauth2.googleapis.com/token")

        let adjustments: [(inout GooglePlayDeveloperAPIClient.Configuration) -> Void] = [
            { $0.baseURL = URL(string: "http://androidpublisher.googleapis.com")! },
            { $0.tokenURL = URL(string: "http://oauth2.googleapis.com/token")! },
            { $0.maxAttempts = 0 },
            { $0.notFoundAttempts = 0 },
            { $0.requestTimeout = .zero },
            { $0.maxVoidedPurchasePages = 0 },
        ]
        for adjust in adjustments {
            let error = #expect(throws: GooglePlayAPIError.self) { try harness.client(adjust) }
            #expect(error?.code == .configuration)
        }
    }
}
