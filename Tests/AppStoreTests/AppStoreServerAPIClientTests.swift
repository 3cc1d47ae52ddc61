import Crypto
import Foundation
import HTTP
import HTTPClient
import TestSupport
import Testing

@testable import AppStore

/// The App Store Server API client against fake App Store servers over real HTTP on 127.0.0.1.
@Suite("App Store Server API client")
struct AppStoreServerAPIClientTests {
    static let transactionID = "2000000123456789"
    static let transactionPath = "/inApps/v1/transactions/2000000123456789"
    static let notFoundInEnvironment = #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#

    /// The JWT header and claims the client must send.
    struct TokenHeader: Decodable, Equatable {
        let alg: String
        let kid: String
        let typ: String
    }

    struct TokenClaims: Decodable, Equatable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud: String
        let bid: String
    }

    static func decodeToken(_ token: String) throws -> (TokenHeader, TokenClaims) {
        let jws = try CompactJWS(token)
        return (
            try JSONDecoder().decode(TokenHeader.self, from: Data(jws.header)),
            try JSONDecoder().decode(TokenClaims.self, from: Data(jws.payload))
        )
    }

    static func signedTransaction(_ id: String) -> HTTPResponse {
        .json(#"{"signedTransactionInfo":"header.\#(id).signature"}"#)
    }

    // MARK: Authentication

    @Test("every request carries a verified ES256 bearer JWT with the documented claims, reused across calls")
    func bearerTokenIsCheckedAndReused() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", Self.transactionPath, Self.signedTransaction("a"))
        let client = try harness.client()

        #expect(
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
                == "header.a.signature")
        #expect(
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
                == "header.a.signature")

        let requests = harness.production.requests
        #expect(requests.count == 2)
        #expect(requests.map(\.refusal) == [nil, nil])
        let token = try #require(requests[0].token)
        #expect(requests[1].token == token)
        let (header, claims) = try Self.decodeToken(token)
        #expect(header == TokenHeader(alg: "ES256", kid: AppStoreHarness.keyID, typ: "JWT"))
        let issued = Int64(AppStoreHarness.start.timeIntervalSince1970)
        #expect(
            claims
                == TokenClaims(
                    iss: AppStoreHarness.issuerID, iat: issued, exp: issued + 1200, aud: "appstoreconnect-v1",
                    bid: AppStoreHarness.bundleID))
        #expect(requests[0].headers["accept"] == "application/json")
    }

    @Test("the token is reused until a minute before it expires, then a new one is signed")
    func tokenIsRenewedAMinuteBeforeExpiry() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", Self.transactionPath, Self.signedTransaction("a"))
        let client = try harness.client()

        _ = try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        harness.clock.advance(by: 1139)
        _ = try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        harness.clock.advance(by: 1)
        _ = try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)

        let tokens = harness.production.requests.map(\.token)
        #expect(harness.production.requests.map(\.refusal) == [nil, nil, nil])
        #expect(tokens[0] == tokens[1])
        #expect(tokens[2] != tokens[1])
        let (_, renewed) = try Self.decodeToken(try #require(tokens[2]))
        let issued = Int64(AppStoreHarness.start.timeIntervalSince1970) + 1140
        #expect(renewed.iat == issued)
        #expect(renewed.exp == issued + 1200)
    }

    @Test("a token the server refuses is .unauthorized at once, and the error never shows the token")
    func refusedTokenIsUnauthorized() async throws {
        let harness = try AppStoreHarness(serverKey: try PrivateKey.generate(.p256))
        harness.production.answer("GET", Self.transactionPath, Self.signedTransaction("a"))
        let client = try harness.client()

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }
        #expect(error?.code == .unauthorized)
        #expect(error?.httpStatus == 401)
        let requests = harness.production.requests
        #expect(requests.map(\.refusal) == ["bad signature"])
        #expect(harness.sleeper.requested.isEmpty)
        let token = try #require(requests[0].token)
        #expect(!String(describing: try #require(error)).contains(token))
        #expect(!String(describing: try #require(error)).contains("Bearer"))
    }

    // MARK: Calls

    @Test("Get Transaction Info returns signedTransactionInfo")
    func transactionInfo() async throws {
        let harness = try AppStoreHarness()
        harness.sandbox.answer("GET", Self.transactionPath, Self.signedTransaction("sandbox"))
        let client = try harness.client()

        let jws = try await client.transactionInfo(transactionID: Self.transactionID, environment: .sandbox)

        #expect(jws == "header.sandbox.signature")
        #expect(harness.sandbox.requests.map(\.method) == ["GET"])
        #expect(harness.production.requests.isEmpty)
    }

    @Test("Get All Subscription Statuses decodes every group and last transaction")
    func allSubscriptionStatuses() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", "/inApps/v1/subscriptions/\(Self.transactionID)",
            .json(
                #"""
                {"environment":"Production","bundleId":"com.example.subscriptions","appAppleId":1234567890,
                 "data":[
                  {"subscriptionGroupIdentifier":"21000001","lastTransactions":[
                   {"status":1,"originalTransactionId":"2000000000000001",
                    "signedTransactionInfo":"t.1.s","signedRenewalInfo":"r.1.s"},
                   {"status":2,"originalTransactionId":"2000000000000002",
                    "signedTransactionInfo":"t.2.s","signedRenewalInfo":"r.2.s"}]},
                  {"subscriptionGroupIdentifier":"21000002","lastTransactions":[
                   {"status":5,"originalTransactionId":"2000000000000003",
                    "signedTransactionInfo":"t.3.s","signedRenewalInfo":"r.3.s"}]}]}
                """#))
        let client = try harness.client()

        let statuses = try await client.allSubscriptionStatuses(
            transactionID: Self.transactionID, environment: .production)

        typealias Last = AppleSubscriptionStatuses.LastTransaction
        #expect(
            statuses
                == AppleSubscriptionStatuses(
                    environment: "Production", bundleId: "com.example.subscriptions", appAppleId: 1_234_567_890,
                    data: [
                        .init(
                            subscriptionGroupIdentifier: "21000001",
                            lastTransactions: [
                                Last(
                                    status: 1, originalTransactionId: "2000000000000001",
                                    signedTransactionInfo: "t.1.s",
                                    signedRenewalInfo: "r.1.s"),
                                Last(
                                    status: 2, originalTransactionId: "2000000000000002",
                                    signedTransactionInfo: "t.2.s",
                                    signedRenewalInfo: "r.2.s"),
                            ]),
                        .init(
                            subscriptionGroupIdentifier: "21000002",
                            lastTransactions: [
                                Last(
                                    status: 5, originalTransactionId: "2000000000000003",
                                    signedTransactionInfo: "t.3.s",
                                    signedRenewalInfo: "r.3.s")
                            ]),
                    ]))
    }

    @Test("Get Transaction History follows revision over three pages and keeps Apple's order")
    func transactionHistoryPagination() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", "/inApps/v2/history/\(Self.transactionID)") { request in
            switch request.query["revision"] {
            case nil: .json(#"{"revision":"rev+1/a=","hasMore":true,"signedTransactions":["t1","t2"]}"#)
            case "rev+1/a=": .json(#"{"revision":"rev2","hasMore":true,"signedTransactions":["t3"]}"#)
            case "rev2": .json(#"{"revision":"rev3","hasMore":false,"signedTransactions":["t4","t5"]}"#)
            default: .json(#"{"errorCode":4000005,"errorMessage":"Invalid revision."}"#, status: 400)
            }
        }
        let client = try harness.client()

        let history = try await client.transactionHistory(transactionID: Self.transactionID, environment: .production)

        #expect(history == ["t1", "t2", "t3", "t4", "t5"])
        #expect(harness.production.requests.map(\.query) == [[:], ["revision": "rev+1/a="], ["revision": "rev2"]])
    }

    @Test("Get Notification History posts the range in milliseconds on every page and follows paginationToken")
    func notificationHistoryPagination() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("POST", "/inApps/v1/notifications/history") { request in
            switch request.query["paginationToken"] {
            case nil:
                .json(
                    #"""
                    {"notificationHistory":[{"signedPayload":"n1","sendAttempts":[]},{"signedPayload":"n2"}],
                     "hasMore":true,"paginationToken":"p 2"}
                    """#)
            case "p 2":
                .json(#"{"notificationHistory":[{"signedPayload":"n3"}],"hasMore":true,"paginationToken":"p3"}"#)
            default: .json(#"{"notificationHistory":[{"signedPayload":"n4"}],"hasMore":false}"#)
            }
        }
        let client = try harness.client()
        let start = Date(timeIntervalSince1970: 1_749_000_000.123)
        let end = Date(timeIntervalSince1970: 1_750_000_000)

        let items = try await client.notificationHistory(start: start, end: end, environment: .production)

        #expect(items.map(\.signedPayload) == ["n1", "n2", "n3", "n4"])
        let requests = harness.production.requests
        #expect(requests.map(\.query) == [[:], ["paginationToken": "p 2"], ["paginationToken": "p3"]])
        let range = ["startDate": Int64(1_749_000_000_123), "endDate": Int64(1_750_000_000_000)]
        #expect(requests.map { $0.body(as: [String: Int64].self) } == [range, range, range])
        #expect(requests.map { $0.headers["content-type"] } == Array(repeating: "application/json", count: 3))
    }

    @Test("Set App Account Token puts the lowercased UUID as JSON on the original transaction")
    func setAppAccountToken() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "PUT", "/inApps/v1/transactions/2000000000000001/appAccountToken", HTTPResponse(status: 200))
        let client = try harness.client()

        try await client.setAppAccountToken(
            originalTransactionID: "2000000000000001", appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138",
            environment: .production)

        let request = try #require(harness.production.requests.first)
        #expect(harness.production.requests.count == 1)
        #expect(request.method == "PUT")
        #expect(request.body(as: [String: String].self) == ["appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"])
        #expect(request.headers["content-type"] == "application/json")
    }

    @Test("an appAccountToken that is not a UUID is refused before any request")
    func appAccountTokenMustBeAUUID() async throws {
        let harness = try AppStoreHarness()
        let client = try harness.client()
        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.setAppAccountToken(
                originalTransactionID: "2000000000000001", appAccountToken: "not-a-uuid", environment: .production)
        }
        #expect(error?.code == .invalidRequest)
        #expect(harness.production.requests.isEmpty)
    }

    // MARK: Ids

    @Test(
        "ids that are empty, longer than 128 bytes or a dot segment are refused before any request",
        arguments: ["", String(repeating: "1", count: 129), String(repeating: "é", count: 65), ".", ".."])
    func badIDsAreRefused(_ id: String) async throws {
        let harness = try AppStoreHarness()
        let client = try harness.client()
        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: id, environment: .production)
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.httpStatus == nil)
        #expect(harness.production.requests.isEmpty)
    }

    @Test("an id of exactly 128 bytes is sent, and ids are percent-encoded into one path segment")
    func idsArePercentEncoded() async throws {
        let harness = try AppStoreHarness()
        let longest = String(repeating: "7", count: 128)
        harness.production.answer("GET", "/inApps/v1/transactions/\(longest)", Self.signedTransaction("long"))
        harness.production.answer("GET", "/inApps/v1/transactions/a b?c", Self.signedTransaction("odd"))
        let client = try harness.client()

        #expect(
            try await client.transactionInfo(transactionID: longest, environment: .production)
                == "header.long.signature")
        #expect(
            try await client.transactionInfo(transactionID: "a b?c", environment: .production) == "header.odd.signature"
        )
        #expect(try AppStoreServerAPIClient.pathSegment("a/b c?d%é") == "a%2Fb%20c%3Fd%25%C3%A9")
        #expect(try AppStoreServerAPIClient.pathSegment("Az09-._~") == "Az09-._~")
    }

    @Test("the Xcode and LocalTesting environments have no server and are refused")
    func localEnvironmentsAreRefused() async throws {
        let harness = try AppStoreHarness()
        let client = try harness.client()
        for environment in [AppleEnvironment.xcode, .localTesting] {
            let error = await #expect(throws: AppStoreAPIError.self) {
                try await client.transactionInfo(transactionID: Self.transactionID, environment: environment)
            }
            #expect(error?.code == .invalidRequest)
        }
        #expect(harness.production.requests.isEmpty && harness.sandbox.requests.isEmpty)
    }

    // MARK: Retries

    @Test("a 429 with Retry-After is retried after exactly that wait, then succeeds")
    func rateLimitHonoursRetryAfter() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.transactionPath,
            HTTPResponse(
                status: 429, headers: [("Content-Type", "application/json"), ("Retry-After", "7")],
                body: Array(#"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#.utf8)),
            Self.signedTransaction("after-wait"))
        let client = try harness.client()

        let jws = try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)

        #expect(jws == "header.after-wait.signature")
        #expect(harness.production.requests.count == 2)
        #expect(harness.sleeper.requested == [.seconds(7)])
    }

    @Test("a Retry-After longer than maxBackoff waits maxBackoff")
    func retryAfterIsCapped() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.transactionPath, HTTPResponse(status: 429, headers: [("Retry-After", "3600")]),
            Self.signedTransaction("a"))
        let client = try harness.client { $0.maxBackoff = .seconds(30) }

        _ = try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)

        #expect(harness.sleeper.requested == [.seconds(30)])
    }

    @Test("429 on every attempt fails .rateLimited after maxAttempts requests")
    func rateLimitedAfterEveryAttempt() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.transactionPath, HTTPResponse(status: 429, headers: [("Retry-After", "1")]))
        let client = try harness.client { $0.maxAttempts = 3 }

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }
        #expect(error?.code == .rateLimited)
        #expect(error?.httpStatus == 429)
        #expect(harness.production.requests.count == 3)
        #expect(harness.sleeper.requested == [.seconds(1), .seconds(1)])
    }

    @Test("two 503s are retried with full-jitter backoff within the doubling caps, then the call succeeds")
    func serviceUnavailableTwiceThenSuccess() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.transactionPath, HTTPResponse(status: 503), HTTPResponse(status: 503),
            Self.signedTransaction("third"))
        let client = try harness.client { $0.baseBackoff = .milliseconds(500) }

        let jws = try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)

        #expect(jws == "header.third.signature")
        #expect(harness.production.requests.count == 3)
        let waits = harness.sleeper.requested
        #expect(waits.count == 2)
        #expect(waits.allSatisfy { $0 >= .zero })
        #expect(waits[0] <= .milliseconds(500))
        #expect(waits[1] <= .milliseconds(1000))
    }

    @Test("500 on every attempt fails .server after exactly maxAttempts requests")
    func serverErrorAfterMaxAttempts() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.transactionPath,
            .json(#"{"errorCode":5000000,"errorMessage":"An unknown error occurred."}"#, status: 500))
        let client = try harness.client()
        #expect(client.configuration.maxAttempts == 4)

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .server)
        #expect(error?.httpStatus == 500)
        #expect(error?.apiErrorCode == 5_000_000)
        #expect(harness.production.requests.count == 4)
        #expect(harness.sleeper.requested.count == 3)
    }

    @Test("a 400 is .invalidRequest with Apple's error code and is not retried")
    func badRequestIsNotRetried() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.transactionPath,
            .json(#"{"errorCode":4000006,"errorMessage":"Invalid transaction id."}"#, status: 400))
        let client = try harness.client()

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .invalidRequest)
        #expect(error?.httpStatus == 400)
        #expect(error?.apiErrorCode == 4_000_006)
        #expect(error?.message == "GET \(Self.transactionPath) in Production: Invalid transaction id.")
        #expect(harness.production.requests.count == 1)
        #expect(harness.sleeper.requested.isEmpty)
    }

    @Test("a refused connection is .network after maxAttempts tries")
    func connectionRefusedIsNetwork() async throws {
        let harness = try AppStoreHarness()
        let held = try HeldPort()
        let client = try harness.client { $0.productionBaseURL = held.url }

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }
        withExtendedLifetime(held) {}

        #expect(error?.code == .network)
        #expect(error?.httpStatus == nil)
        #expect(error?.message == "GET \(Self.transactionPath) in Production: connection refused")
        #expect(harness.sleeper.requested.count == 3)
    }

    @Test("a sleeper that throws (a cancelled task) ends the call with .network and no further request")
    func cancelledWaitEndsTheCall() async throws {
        let harness = try AppStoreHarness(sleeper: RecordingSleeper(failing: true))
        harness.production.answer("GET", Self.transactionPath, HTTPResponse(status: 503), Self.signedTransaction("a"))
        let client = try harness.client()

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .network)
        #expect(harness.production.requests.count == 1)
    }

    @Test("cancelling the calling task cancels the request in flight: .network, no retry")
    func cancellationStopsTheRequest() async throws {
        let harness = try AppStoreHarness()
        let (arrivals, arrived) = AsyncStream<Void>.makeStream()
        let release = DispatchSemaphore(value: 0)
        harness.production.answer("GET", Self.transactionPath) { _ in
            arrived.yield()
            // Held until the call has ended; the limit only keeps a broken client from hanging the
            // run. It is long because a loaded machine can take seconds to act on the cancellation,
            // and an answer sent before then would be taken as the call's result.
            _ = release.wait(timeout: .now() + 120)
            return Self.signedTransaction("late")
        }
        let client = try harness.client()

        let call = Task { () async throws(AppStoreAPIError) -> String in
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }
        var iterator = arrivals.makeAsyncIterator()
        await iterator.next()
        call.cancel()
        let result = await call.result
        release.signal()

        #expect(throws: AppStoreAPIError(.network, "GET \(Self.transactionPath) in Production: cancelled")) {
            try result.get()
        }
        #expect(harness.production.requests.count == 1)
        #expect(harness.sleeper.requested.isEmpty)
    }

    // MARK: Not found and environments

    @Test("a 404 with another Apple error code is .notFound with that code, not retried")
    func notFound() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", "/inApps/v2/history/\(Self.transactionID)",
            .json(#"{"errorCode":4040005,"errorMessage":"Original transaction id not found."}"#, status: 404))
        let client = try harness.client { $0.fallBackToOtherEnvironment = true }

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionHistory(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .notFound)
        #expect(error?.httpStatus == 404)
        #expect(error?.apiErrorCode == 4_040_005)
        #expect(harness.production.requests.count == 1)
        #expect(harness.sandbox.requests.isEmpty)
    }

    @Test("error 4040010 without fallback is .wrongEnvironment and the other environment is not asked")
    func wrongEnvironmentWithoutFallback() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", Self.transactionPath, .json(Self.notFoundInEnvironment, status: 404))
        harness.sandbox.answer("GET", Self.transactionPath, Self.signedTransaction("sandbox"))
        let client = try harness.client()

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .wrongEnvironment)
        #expect(error?.httpStatus == 404)
        #expect(error?.apiErrorCode == 4_040_010)
        #expect(harness.production.requests.count == 1)
        #expect(harness.sandbox.requests.isEmpty)
    }

    @Test(
        "error 4040010 with fallback repeats the call once in the other environment, which answers",
        arguments: [AppleEnvironment.production, .sandbox])
    func wrongEnvironmentFallsBack(_ asked: AppleEnvironment) async throws {
        let harness = try AppStoreHarness()
        let (first, other) =
            asked == .production ? (harness.production, harness.sandbox) : (harness.sandbox, harness.production)
        first.answer("GET", Self.transactionPath, .json(Self.notFoundInEnvironment, status: 404))
        other.answer("GET", Self.transactionPath, Self.signedTransaction("other"))
        let client = try harness.client { $0.fallBackToOtherEnvironment = true }

        let jws = try await client.transactionInfo(transactionID: Self.transactionID, environment: asked)

        #expect(jws == "header.other.signature")
        #expect(first.requests.count == 1)
        #expect(other.requests.count == 1)
        #expect(other.requests.map(\.refusal) == [nil])
    }

    @Test("error 4040010 in both environments is .notFound after one request to each")
    func unknownInBothEnvironments() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", Self.transactionPath, .json(Self.notFoundInEnvironment, status: 404))
        harness.sandbox.answer("GET", Self.transactionPath, .json(Self.notFoundInEnvironment, status: 404))
        let client = try harness.client { $0.fallBackToOtherEnvironment = true }

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .notFound)
        #expect(error?.apiErrorCode == 4_040_010)
        #expect(harness.production.requests.count == 1)
        #expect(harness.sandbox.requests.count == 1)
    }

    // MARK: Hostile answers

    @Test("a 200 whose body is not the documented JSON is .invalidResponse naming the missing field")
    func undecodableSuccessIsInvalidResponse() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", Self.transactionPath, .json(#"{"unexpected":true}"#))
        harness.production.answer("GET", "/inApps/v1/transactions/2", .text("<html>maintenance</html>"))
        let client = try harness.client()

        let missing = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }
        let garbage = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: "2", environment: .production)
        }

        #expect(missing?.code == .invalidResponse)
        #expect(missing?.message == "the answer to GET \(Self.transactionPath) has no signedTransactionInfo")
        #expect(garbage?.code == .invalidResponse)
        #expect(garbage?.message == "the answer to GET /inApps/v1/transactions/2 is not a JSON object")
        #expect(harness.production.requests.count == 2)
    }

    @Test("a body over maxResponseBytes is .invalidResponse and not retried")
    func oversizedBodyIsRefused() async throws {
        let harness = try AppStoreHarness()
        let padding = String(repeating: "x", count: 4096)
        harness.production.answer("GET", Self.transactionPath, .json(#"{"signedTransactionInfo":"\#(padding)"}"#))
        let client = try harness.client { $0.maxResponseBytes = 1024 }

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .invalidResponse)
        #expect(error?.message == "GET \(Self.transactionPath) in Production: the answer is longer than 1024 bytes")
        #expect(harness.production.requests.count == 1)
    }

    @Test("a server that always has more pages is cut off after maxPages requests")
    func endlessPaginationStops() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer("GET", "/inApps/v2/history/\(Self.transactionID)") { request in
            let next = Int(request.query["revision"] ?? "0")! + 1
            return .json(#"{"revision":"\#(next)","hasMore":true,"signedTransactions":["t\#(next)"]}"#)
        }
        let client = try harness.client { $0.maxPages = 5 }

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionHistory(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .invalidResponse)
        #expect(harness.production.requests.count == 5)
    }

    @Test("a page that repeats an earlier revision, or has more without one, is .invalidResponse")
    func loopingOrMissingRevisionIsRefused() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", "/inApps/v2/history/1", .json(#"{"revision":"same","hasMore":true,"signedTransactions":[]}"#))
        harness.production.answer("GET", "/inApps/v2/history/2", .json(#"{"hasMore":true,"signedTransactions":[]}"#))
        let client = try harness.client()

        let looping = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionHistory(transactionID: "1", environment: .production)
        }
        let missing = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionHistory(transactionID: "2", environment: .production)
        }

        #expect(looping?.code == .invalidResponse)
        #expect(missing?.code == .invalidResponse)
        #expect(
            harness.production.requests.map(\.path) == [
                "/inApps/v2/history/1", "/inApps/v2/history/1", "/inApps/v2/history/2",
            ])
    }

    @Test("a redirect is not followed: the token never reaches the other URL")
    func redirectIsNotFollowed() async throws {
        let harness = try AppStoreHarness()
        harness.production.answer(
            "GET", Self.transactionPath,
            HTTPResponse(status: 302, headers: [("Location", harness.sandbox.baseURL.absoluteString + "/stolen")]))
        harness.sandbox.answer("GET", "/stolen", Self.signedTransaction("stolen"))
        let client = try harness.client()

        let error = await #expect(throws: AppStoreAPIError.self) {
            try await client.transactionInfo(transactionID: Self.transactionID, environment: .production)
        }

        #expect(error?.code == .invalidResponse)
        #expect(error?.httpStatus == 302)
        #expect(harness.sandbox.requests.isEmpty)
    }

    // MARK: Configuration

    @Test("loadPrivateKey reads a P-256 .p8 file")
    func loadsAP8File() throws {
        let key = try PrivateKey.generate(.p256)
        let path = try TemporaryFile.write(try key.pemPKCS8())
        defer { TemporaryFile.remove(path) }

        let loaded = try AppStoreServerAPIClient.Configuration.loadPrivateKey(p8Path: path)

        #expect(loaded.kind == .p256)
        #expect(try loaded.publicKeyPEM() == key.publicKeyPEM())
    }

    @Test("loadPrivateKey refuses a missing file, a file without a key and a P-384 key, naming the path only")
    func refusesBadKeyFiles() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("absent-\(UUID()).p8").path
        let garbage = try TemporaryFile.write(
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ1dC1ub3QtYS1rZXk=\n-----END PRIVATE KEY-----\n")
        let p384 = try TemporaryFile.write(try PrivateKey.generate(.p384).pemPKCS8())
        defer {
            TemporaryFile.remove(garbage)
            TemporaryFile.remove(p384)
        }
        let expected = [
            missing: "cannot read the App Store Connect API key file \(missing)",
            garbage: "\(garbage) holds no readable unencrypted PEM private key",
            p384: "the key in \(p384) is not a P-256 (ES256) key",
        ]
        for (path, message) in expected {
            #expect(throws: AppStoreAPIError(.configuration, message)) {
                try AppStoreServerAPIClient.Configuration.loadPrivateKey(p8Path: path)
            }
        }
    }

    @Test("the client refuses a non-P-256 key, an empty id and a plain-http base URL to another host")
    func refusesBadConfigurations() throws {
        let harness = try AppStoreHarness()
        let p384 = try PrivateKey.generate(.p384)
        let adjustments: [(inout AppStoreServerAPIClient.Configuration) -> Void] = [
            { $0.privateKey = p384 },
            { $0.issuerID = "" },
            { $0.sandboxBaseURL = URL(string: "http://api.storekit-sandbox.apple.com")! },
            { $0.maxAttempts = 0 },
        ]
        for adjust in adjustments {
            let error = #expect(throws: AppStoreAPIError.self) { try harness.client(adjust) }
            #expect(error?.code == .configuration)
        }
        let defaults = AppStoreServerAPIClient.Configuration(
            keyID: "k", issuerID: "i", bundleID: "b", privateKey: harness.key)
        #expect(defaults.productionBaseURL.absoluteString == "https://api.storekit.apple.com")
        #expect(defaults.sandboxBaseURL.absoluteString == "https://api.storekit-sandbox.apple.com")
        #expect(defaults.requestTimeout == .seconds(15))
        #expect(defaults.maxAttempts == 4)
        #expect(defaults.baseBackoff == .milliseconds(500))
        #expect(defaults.maxBackoff == .seconds(30))
        #expect(defaults.fallBackToOtherEnvironment == false)
        _ = try AppStoreServerAPIClient(configuration: defaults)
    }
}
