import Crypto
import Foundation
import GooglePlay
import HTTP
import HTTPClient
import TestSupport
import Testing

/// Access tokens from the fake OAuth endpoint: the signed assertion, the form it is posted in,
/// caching until five minutes before expiry, invalidation and refusals.
@Suite("Google access token source")
struct GoogleAccessTokenSourceTests {
    /// A token source on the harness's fake endpoint and clock (its request timeout is real
    /// time and generous, as the harness's is).
    static func source(_ harness: GooglePlayHarness) throws -> GoogleAccessTokenSource {
        let clock = harness.clock
        return try GoogleAccessTokenSource(
            account: harness.account, tokenURL: harness.oauth.tokenURL, requestTimeout: .seconds(120),
            now: { clock.now() })
    }

    @Test("the assertion is an RS256 JWT with the documented header and claims, posted as a jwt-bearer form")
    func assertionAndForm() async throws {
        let harness = try GooglePlayHarness()
        let source = try Self.source(harness)

        let token = try await source.accessToken()

        #expect(token == "ya29.fake-access-token-1")
        let exchanges = harness.oauth.exchanges
        #expect(exchanges.count == 1)
        #expect(exchanges[0].refusal == nil)
        #expect(exchanges[0].contentType == "application/x-www-form-urlencoded")
        #expect(exchanges[0].grantType == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let issued = Int64(GooglePlayHarness.start.timeIntervalSince1970)
        #expect(
            exchanges[0].assertion
                == FakeGoogleOAuthServer.Assertion(
                    alg: "RS256", typ: "JWT", kid: GooglePlayHarness.keyID, iss: GooglePlayHarness.clientEmail,
                    scope: "https://www.googleapis.com/auth/androidpublisher",
                    aud: "https://oauth2.googleapis.com/token", iat: issued, exp: issued + 3600))
    }

    @Test("the token is reused until five minutes before it expires, then a new one is fetched")
    func cachedUntilFiveMinutesBeforeExpiry() async throws {
        let harness = try GooglePlayHarness()
        let source = try Self.source(harness)

        let first = try await source.accessToken()
        harness.clock.advance(by: 3599 - 300 - 1)
        let cached = try await source.accessToken()
        harness.clock.advance(by: 1)
        let renewed = try await source.accessToken()

        #expect(first == "ya29.fake-access-token-1")
        #expect(cached == first)
        #expect(renewed == "ya29.fake-access-token-2")
        let exchanges = harness.oauth.exchanges
        #expect(exchanges.count == 2)
        #expect(exchanges[1].assertion?.iat == Int64(GooglePlayHarness.start.timeIntervalSince1970) + 3299)
    }

    @Test("callers that arrive together share one exchange")
    func concurrentCallersShareAnExchange() async throws {
        let harness = try GooglePlayHarness()
        let source = try Self.source(harness)

        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 { group.addTask { try await source.accessToken() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(tokens == Array(repeating: "ya29.fake-access-token-1", count: 8))
        #expect(harness.oauth.exchanges.count == 1)
    }

    @Test("invalidate(ifCurrent:) drops the cached token only when it is that token")
    func invalidation() async throws {
        let harness = try GooglePlayHarness()
        let source = try Self.source(harness)

        let first = try await source.accessToken()
        source.invalidate(ifCurrent: "ya29.some-older-token")
        #expect(try await source.accessToken() == first)
        source.invalidate(ifCurrent: first)
        let second = try await source.accessToken()
        source.invalidate(ifCurrent: first)  // already replaced: nothing happens
        #expect(try await source.accessToken() == second)
        source.invalidate(ifCurrent: second)
        let third = try await source.accessToken()

        #expect([first, second, third] == (1...3).map { "ya29.fake-access-token-\($0)" })
    }

    @Test("an assertion the endpoint refuses is .unauthorized with Google's reason, never the assertion")
    func refusedAssertion() async throws {
        let harness = try GooglePlayHarness(serverKey: try TestRSAKeys.key(5))
        let source = try Self.source(harness)

        let error = await #expect(throws: GooglePlayAPIError.self) { try await source.accessToken() }

        let tokenURL = harness.oauth.tokenURL.absoluteString
        #expect(
            error
                == GooglePlayAPIError(
                    .unauthorized,
                    "the access token exchange at \(tokenURL) for \(GooglePlayHarness.clientEmail): invalid_grant: Invalid JWT Signature.",
                    httpStatus: 400))
        let assertion = try #require(harness.oauth.exchanges.first?.assertionText)
        #expect(!String(describing: try #require(error)).contains(assertion))
        #expect(!String(describing: try #require(error)).contains(assertion.split(separator: ".")[2]))
    }

    @Test("a failed exchange is not cached: the next call tries again")
    func failureIsNotCached() async throws {
        let harness = try GooglePlayHarness()
        harness.oauth.fail(with: HTTPResponse(status: 503))
        let source = try Self.source(harness)

        let error = await #expect(throws: GooglePlayAPIError.self) { try await source.accessToken() }
        let token = try await source.accessToken()

        #expect(error?.code == .server)
        #expect(error?.httpStatus == 503)
        #expect(token == "ya29.fake-access-token-1")
        #expect(harness.oauth.exchanges.count == 2)
    }

    @Test(
        "an answer without a usable bearer token is .invalidResponse",
        arguments: [
            (#"{"expires_in":3599,"token_type":"Bearer"}"#, "has no access_token"),
            (#"{"access_token":"a","expires_in":3599,"token_type":"mac"}"#, "has a token_type other than Bearer"),
            (
                #"{"access_token":"a b","expires_in":3599,"token_type":"Bearer"}"#,
                "has an access_token that cannot be sent in a header"
            ),
            (#"{"access_token":"a","expires_in":0,"token_type":"Bearer"}"#, "has an expires_in that is not positive"),
            (#"{"access_token":"a","expires_in":"soon","token_type":"Bearer"}"#, "has a expires_in of the wrong type"),
        ])
    func unusableAnswer(_ body: String, _ why: String) async throws {
        let harness = try GooglePlayHarness()
        harness.oauth.fail(with: .json(body))
        let source = try Self.source(harness)

        let error = await #expect(throws: GooglePlayAPIError.self) { try await source.accessToken() }

        let tokenURL = harness.oauth.tokenURL.absoluteString
        #expect(
            error
                == GooglePlayAPIError(
                    .invalidResponse,
                    "the access token exchange at \(tokenURL) for \(GooglePlayHarness.clientEmail): the answer \(why)",
                    httpStatus: 200))
    }

    @Test("a token URL that is plain http to another host is refused")
    func refusesInsecureTokenURL() throws {
        let harness = try GooglePlayHarness()

        #expect(
            throws: GooglePlayAPIError(
                .configuration,
                "the token URL http://oauth.example.com/token is neither https nor http to a loopback address")
        ) {
            try GoogleAccessTokenSource(
                account: harness.account, tokenURL: URL(string: "http://oauth.example.com/token")!)
        }
    }
}
