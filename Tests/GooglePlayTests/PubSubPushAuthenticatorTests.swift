import Crypto
import Foundation
import GooglePlay
import Testing

@Suite("Pub/Sub push authentication")
struct PubSubPushAuthenticatorTests {
    let signer: PushTokenSigner
    let endpoint: FakeKeySetEndpoint
    let authenticator: PubSubPushAuthenticator
    let now = PushTokenSigner.now

    init() throws {
        signer = try PushTokenSigner(keyID: "k1")
        endpoint = FakeKeySetEndpoint([.keys([signer.jwk])])
        authenticator = Self.authenticator(endpoint)
    }

    static func authenticator(_ endpoint: FakeKeySetEndpoint) -> PubSubPushAuthenticator {
        PubSubPushAuthenticator(
            configuration: .init(audience: PushTokenSigner.audience, serviceAccountEmail: PushTokenSigner.email),
            fetch: endpoint.fetch)
    }

    /// The error authenticating `header` at `now` throws; the message must not repeat any part of
    /// the token.
    func refusal(_ header: String?, at time: Date? = nil) async throws -> PubSubPushAuthenticationError {
        let error = await #expect(throws: PubSubPushAuthenticationError.self) {
            try await authenticator.authenticate(authorizationHeader: header, now: time ?? now)
        }
        let refusal = try #require(error)
        for segment in (header ?? "").split(separator: " ").last?.split(separator: ".") ?? [] where segment.count > 8 {
            #expect(!refusal.description.contains(segment))
        }
        return refusal
    }

    @Test("a token signed with the published key and the right claims is accepted")
    func accepted() async throws {
        let token = try signer.token()
        let verified = try await authenticator.authenticate(authorizationHeader: "Bearer \(token)", now: now)
        #expect(
            verified
                == PubSubPushToken(
                    keyID: "k1", issuer: "https://accounts.google.com", audience: PushTokenSigner.audience,
                    email: PushTokenSigner.email, subject: "113774264463038321964",
                    issuedAt: now.addingTimeInterval(-600), expiresAt: now.addingTimeInterval(3000)))
        #expect(endpoint.fetches == 1)
        #expect(endpoint.sources == [.google])
        #expect(PubSubPushAuthenticator.KeySource.google.description == "https://www.googleapis.com/oauth2/v3/certs")

        // The key set is reused; the scheme is case-insensitive; the issuer may lack the scheme;
        // spaces and tabs around the value and the token are optional whitespace.
        let bare = try signer.token(PushTokenSigner.claims(["iss": "accounts.google.com"]))
        let again = try await authenticator.authenticate(authorizationHeader: "\tbearer \t \(bare) \t", now: now)
        #expect(again.issuer == "accounts.google.com")
        #expect(endpoint.fetches == 1)
        #expect(await authenticator.keySetFetches == 1)
    }

    @Test("aud as an array containing the audience, email in other case and email_verified \"true\" are accepted")
    func lenientForms() async throws {
        let token = try signer.token(
            PushTokenSigner.claims([
                "aud": ["https://other.example", PushTokenSigner.audience],
                "email": PushTokenSigner.email.uppercased(), "email_verified": "true",
            ]))
        let verified = try await authenticator.authenticate(token: token, now: now)
        #expect(verified.audience == PushTokenSigner.audience)
        #expect(verified.email == PushTokenSigner.email.uppercased())
    }

    @Test("a signature by another key under the published kid is refused as bad_signature")
    func wrongSignature() async throws {
        let impostor = try PushTokenSigner(keyID: "k1", keyIndex: 1)
        let error = try await refusal("Bearer \(try impostor.token())")
        #expect(error.code == .badSignature)
        #expect(error.message == #"the RS256 signature does not verify with signing key "k1""#)
        #expect(error.description == #"bad_signature: the RS256 signature does not verify with signing key "k1""#)
        #expect(!error.isRetryable)
    }

    @Test("claims changed after signing are refused as bad_signature")
    func tamperedClaims() async throws {
        let parts = try signer.token().split(separator: ".")
        let forged = Base64URL.encode(try PushTokenSigner.json(PushTokenSigner.claims(["email": "me@evil.example"])))
        let error = try await refusal("Bearer \(parts[0]).\(forged).\(parts[2])")
        #expect(error.code == .badSignature)
    }

    @Test("an unknown kid is refused after one refresh of the key set that still lacks it; refreshes are rate-limited")
    func unknownKey() async throws {
        try await authenticator.refreshKeys(now: now.addingTimeInterval(-300))
        #expect(endpoint.fetches == 1)
        let stranger = try PushTokenSigner(keyID: "k9", keyIndex: 2)

        let error = try await refusal("Bearer \(try stranger.token())")
        #expect(error.code == .unknownKey)
        #expect(error.message == #"no signing key has kid "k9", even after a refresh"#)
        #expect(endpoint.fetches == 2)

        // Within a minute of that refresh another unknown kid does not fetch again.
        let soon = try await refusal("Bearer \(try stranger.token())", at: now.addingTimeInterval(59))
        #expect(soon.code == .unknownKey)
        #expect(endpoint.fetches == 2)
        // A minute later it does; the known key still passes without a fetch.
        _ = try await refusal("Bearer \(try stranger.token())", at: now.addingTimeInterval(60))
        #expect(endpoint.fetches == 3)
        _ = try await authenticator.authenticate(token: try signer.token(), now: now.addingTimeInterval(61))
        #expect(endpoint.fetches == 3)
    }

    @Test("a key rotation is followed: a new kid that appears in the key set on refresh is accepted")
    func keyRotation() async throws {
        let next = try PushTokenSigner(keyID: "k2", keyIndex: 3)
        endpoint.answer([.keys([signer.jwk]), .keys([signer.jwk, next.jwk])])
        try await authenticator.refreshKeys(now: now.addingTimeInterval(-300))
        let verified = try await authenticator.authenticate(token: try next.token(), now: now)
        #expect(verified.keyID == "k2")
        #expect(endpoint.fetches == 2)
        // The old key stays usable while it is published.
        #expect(try await authenticator.authenticate(token: try signer.token(), now: now).keyID == "k1")
        #expect(endpoint.fetches == 2)
    }

    @Test("a key set that cannot be fetched or read makes the push retryable")
    func fetchFails() async throws {
        endpoint.answer([.failure])
        let error = try await refusal("Bearer \(try signer.token())")
        #expect(error.code == .retryable)
        #expect(error.isRetryable)
        #expect(
            error.message
                == "no signing key with kid \"k1\" is known and the key set could not be fetched: reading the signing "
                + "keys from https://www.googleapis.com/oauth2/v3/certs failed: connection refused")

        endpoint.answer([.bytes(Array("<html>".utf8))])
        let unreadable = try await refusal("Bearer \(try signer.token())", at: now.addingTimeInterval(60))
        #expect(unreadable.code == .retryable)
        #expect(unreadable.message.hasSuffix("cannot be used: the key set is not a JSON object"))
        #expect(endpoint.fetches == 2)

        let refresh = await #expect(throws: PubSubPushAuthenticationError.self) {
            try await authenticator.refreshKeys(now: now)
        }
        #expect(refresh?.code == .retryable)
        #expect(endpoint.fetches == 3)

        endpoint.answer([.keys([signer.jwk])])
        _ = try await authenticator.authenticate(token: try signer.token(), now: now.addingTimeInterval(120))
        #expect(endpoint.fetches == 4)
    }

    @Test("an old key set is fetched again, and still used when that fetch fails")
    func staleKeySet() async throws {
        try await authenticator.refreshKeys(now: now.addingTimeInterval(-3601))
        endpoint.answer([.failure])
        let verified = try await authenticator.authenticate(token: try signer.token(), now: now)
        #expect(verified.keyID == "k1")
        #expect(endpoint.fetches == 2)
        // A kid the old set lacks cannot be told apart from a rotation: retryable.
        let stranger = try PushTokenSigner(keyID: "k9", keyIndex: 2)
        let error = try await refusal("Bearer \(try stranger.token())", at: now.addingTimeInterval(60))
        #expect(error.code == .retryable)
        #expect(endpoint.fetches == 3)
    }

    @Test("concurrent first pushes share one key set fetch")
    func concurrentFirstPushes() async throws {
        let token = try signer.token()
        let authenticator = authenticator
        let now = now
        let accepted = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask { try await authenticator.authenticate(token: token, now: now).keyID }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(accepted == Array(repeating: "k1", count: 20))
        #expect(endpoint.fetches == 1)
    }

    @Test(
        "wrong claims are refused with their own code",
        arguments: [
            (
                #"{"aud":"https://other.example"}"#, "wrong_audience",
                #"aud "https://other.example" is not the configured "https://push.example.com/google/rtdn""#
            ),
            (
                #"{"aud":["https://a.example","https://b.example"]}"#, "wrong_audience",
                #"no aud of the token is the configured "https://push.example.com/google/rtdn""#
            ),
            (#"{"aud":null}"#, "wrong_audience", "the token names no aud"),
            (
                #"{"iss":"https://evil.example"}"#, "wrong_issuer",
                #"iss "https://evil.example" is not Google (https://accounts.google.com)"#
            ),
            (#"{"iss":"accounts.google.com.evil.example"}"#, "wrong_issuer", nil),
            (#"{"iss":null}"#, "wrong_issuer", "the token names no iss"),
            (
                #"{"email":"someone@example-project.iam.gserviceaccount.com"}"#, "wrong_email",
                #"email "someone@example-project.iam.gserviceaccount.com" is not the configured push service account "#
                    + #""rtdn-push@example-project.iam.gserviceaccount.com""#
            ),
            (#"{"email":null}"#, "wrong_email", "the token names no email"),
            (#"{"email_verified":false}"#, "email_not_verified", "email_verified is not true"),
            (#"{"email_verified":"false"}"#, "email_not_verified", "email_verified is not true"),
            (#"{"email_verified":null}"#, "email_not_verified", "the token has no email_verified"),
            (#"{"email_verified":1}"#, "malformed", "the token payload's email_verified has the wrong type"),
            (#"{"exp":null}"#, "malformed", "the token has no exp"),
            (#"{"iat":"yesterday"}"#, "malformed", "the token payload's iat has the wrong type"),
        ] as [(String, String, String?)])
    func wrongClaims(changes: String, code: String, message: String?) async throws {
        let changes = try #require(try JSONSerialization.jsonObject(with: Data(changes.utf8)) as? [String: Any])
        let error = try await refusal("Bearer \(try signer.token(PushTokenSigner.claims(changes)))")
        #expect(error.code.description == code)
        if let message { #expect(error.message == message) }
    }

    @Test("an expired token is refused beyond 60 s of clock skew")
    func expired() async throws {
        let expiry = Int(now.timeIntervalSince1970) - 61
        let late = PushTokenSigner.claims(["iat": expiry - 3600, "exp": expiry])
        let error = try await refusal("Bearer \(try signer.token(late))")
        #expect(error.code == .expired)
        #expect(
            error.message
                == "the token expired at 2025-06-15T15:05:39Z; it is 2025-06-15T15:06:40Z (60 s of clock skew allowed)")
        let withinSkew = PushTokenSigner.claims(["iat": expiry + 1 - 3600, "exp": expiry + 1])
        _ = try await authenticator.authenticate(token: try signer.token(withinSkew), now: now)
    }

    @Test("a token issued in the future is refused as not yet valid beyond 60 s of clock skew")
    func notYetValid() async throws {
        let issued = Int(now.timeIntervalSince1970) + 61
        let early = PushTokenSigner.claims(["iat": issued, "exp": issued + 3600])
        let error = try await refusal("Bearer \(try signer.token(early))")
        #expect(error.code == .notYetValid)
        #expect(
            error.message
                == "the token is issued at 2025-06-15T15:07:41Z, in the future; it is 2025-06-15T15:06:40Z "
                + "(60 s of clock skew allowed)")
        let withinSkew = PushTokenSigner.claims(["iat": issued - 1, "exp": issued - 1 + 3600])
        _ = try await authenticator.authenticate(token: try signer.token(withinSkew), now: now)
    }

    @Test("a lifetime over one hour, or exp not after iat, is refused as malformed")
    func lifetime() async throws {
        let time = Int(now.timeIntervalSince1970)
        for (iat, exp, lifetime) in [(time - 600, time + 3001, 3601), (time, time, 0), (time + 10, time, -10)] {
            let error = try await refusal(
                "Bearer \(try signer.token(PushTokenSigner.claims(["iat": iat, "exp": exp])))")
            #expect(error.code == .malformed)
            #expect(error.message == "the token's lifetime (exp - iat) is \(lifetime) s; accepted are 1 to 3600 s")
        }
    }

    @Test("alg none, HS256 and other algorithms are refused before any key is fetched")
    func unsupportedAlgorithms() async throws {
        let claims = PushTokenSigner.claims()
        let none = try PushTokenSigner.unsigned(header: ["alg": "none", "kid": "k1"], claims: claims, signature: [])
        let noneError = try await refusal("Bearer \(none)")
        #expect(noneError.code == .unsupportedAlgorithm)
        #expect(noneError.message == #"alg "none" is not accepted; Pub/Sub push tokens are RS256"#)

        let hs256 = try PushTokenSigner.unsigned(
            header: ["alg": "HS256", "kid": "k1"], claims: claims, signature: Digest.sha256(Array("secret".utf8)))
        let hsError = try await refusal("Bearer \(hs256)")
        #expect(hsError.code == .unsupportedAlgorithm)
        #expect(hsError.message == #"alg "HS256" is not accepted; Pub/Sub push tokens are RS256"#)

        let es256 = try signer.token(headerChanges: ["alg": "ES256"])
        #expect(try await refusal("Bearer \(es256)").code == .unsupportedAlgorithm)
        let noAlg = try signer.token(headerChanges: ["alg": NSNull()])
        #expect(try await refusal("Bearer \(noAlg)").message == "the token header names no alg")
        let crit = try signer.token(headerChanges: ["crit": ["exp"]])
        #expect(try await refusal("Bearer \(crit)").message == "the token header has crit parameters")
        #expect(endpoint.fetches == 0)
    }

    @Test("a key published for another algorithm is not used for RS256")
    func keyForAnotherAlgorithm() async throws {
        endpoint.answer([.keys([JSONWebKeySet.Key(publicKey: signer.publicKey, keyID: "k1", algorithm: "RS512")])])
        let error = try await refusal("Bearer \(try signer.token())")
        #expect(error.code == .unsupportedAlgorithm)
        #expect(error.message == #"signing key "k1" is published for "RS512""#)
    }

    @Test(
        "a missing header or bearer token is refused as missing",
        arguments: [
            (nil, "the push has no Authorization header"),
            ("", "the push has no Authorization header"),
            ("   ", "the push has no Authorization header"),
            ("Bearer", "the Authorization header carries no Bearer token"),
            ("Basic dXNlcjpwYXNz", "the Authorization header carries no Bearer token"),
            ("eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "the Authorization header carries no Bearer token"),
        ] as [(String?, String)])
    func missing(header: String?, message: String) async throws {
        let error = try await refusal(header)
        #expect(error.code == .missing)
        #expect(error.message == message)
    }

    @Test(
        "tokens that are not a JWT are refused as malformed",
        arguments: [
            ("not-a-jwt", "the token is not a JWT: it has 1 dot-separated segments, not 3"),
            ("a.b.c.d", "the token is not a JWT: it has 4 dot-separated segments, not 3"),
            ("!!!.e30.c2ln", "the token header is not a base64url JSON object"),
            ("WzFd.e30.c2ln", "the token header is not a base64url JSON object"),
            (
                "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30+.c2ln",
                "the token is not a compact JWS: the JWS payload is not unpadded base64url"
            ),
            (
                "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30.",
                "the token is not a compact JWS: the JWS signature is empty"
            ),
            ("eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "the token header names no kid"),
        ])
    func notAJWT(token: String, message: String) async throws {
        let error = try await refusal("Bearer \(token)")
        #expect(error.code == .malformed)
        #expect(error.message == message)
    }

    @Test("claims that are not a JSON object are refused as malformed after the signature check")
    func claimsNotAnObject() async throws {
        let token = try CompactJWS.sign(
            header: PushTokenSigner.json(["alg": "RS256", "kid": "k1"]), payload: Array("[1]".utf8),
            key: signer.privateKey, algorithm: .rs256)
        let error = try await refusal("Bearer \(token)")
        #expect(error.code == .malformed)
        #expect(error.message == "the token payload is not a JSON object")
    }

    @Test("a token over 8 KiB is refused without parsing")
    func oversized() async throws {
        let token = try signer.token(PushTokenSigner.claims(["pad": String(repeating: "x", count: 8 * 1024)]))
        let error = try await refusal("Bearer \(token)")
        #expect(error.code == .malformed)
        #expect(error.message == "the token is \(token.utf8.count) bytes, more than the 8192 accepted")
        #expect(endpoint.fetches == 0)
    }

    @Test("an attacker-chosen kid or alg is shown cut short and in printable ASCII")
    func hostileHeaderValues() async throws {
        let kid = "k\n\u{1B}[31m" + String(repeating: "z", count: 100)
        let error = try await refusal("Bearer \(try signer.token(headerChanges: ["kid": kid]))")
        #expect(error.code == .unknownKey)
        #expect(
            error.message
                == "no signing key has kid \"k??[31m\(String(repeating: "z", count: 57))…\", even after a refresh")
    }

    @Test("keys can be read from a JWKS file")
    func keyFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let configuration = PubSubPushAuthenticator.Configuration(
            audience: PushTokenSigner.audience, serviceAccountEmail: PushTokenSigner.email, keySource: .file(path))
        let fromFile = PubSubPushAuthenticator(configuration: configuration)

        let missing = await #expect(throws: PubSubPushAuthenticationError.self) {
            try await fromFile.authenticate(token: try signer.token(), now: now)
        }
        #expect(missing?.code == .retryable)
        #expect(missing?.message.hasSuffix("the key set file \(path) cannot be opened") == true)

        try Data(JSONWebKeySet(keys: [signer.jwk]).json()).write(to: URL(fileURLWithPath: path))
        try await fromFile.refreshKeys(now: now)
        #expect(try await fromFile.authenticate(token: try signer.token(), now: now).keyID == "k1")
        #expect(await fromFile.keySetFetches == 2)
    }

    @Test(
        "the documented example token has the shape checked here: RS256 with a kid, Google's claims, one hour",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)))
    func documentedExample() async throws {
        let line = String(
            decoding: try GoogleFixtures.data("pubsub/docs_example_authorization_header.txt"), as: UTF8.self
        )
        .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("Authorization: Bearer "))
        let header = String(line.dropFirst("Authorization: ".count))
        let jws = try CompactJWS(String(header.dropFirst("Bearer ".count)))
        let decoded =
            try JSONSerialization.jsonObject(
                with: try GoogleFixtures.data("pubsub/docs_example_decoded.json")) as? [String: Any]
        let expected = try #require(decoded)

        let jwsHeader = try #require(try JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any])
        #expect(jwsHeader as NSDictionary == expected["header"] as? NSDictionary)
        #expect(jwsHeader["alg"] as? String == "RS256")
        #expect(jwsHeader["kid"] as? String == "7d680d8c70d44e947133cbd499ebc1a61c3d5abc")
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any])
        #expect(claims as NSDictionary == expected["claims"] as? NSDictionary)
        #expect(claims["iss"] as? String == "https://accounts.google.com")
        #expect(claims["aud"] as? String == "https://example.com")
        #expect(claims["email"] as? String == "gae-gcp@appspot.gserviceaccount.com")
        #expect(claims["email_verified"] as? Bool == true)
        let issued = try #require(claims["iat"] as? Int)
        #expect(try #require(claims["exp"] as? Int) - issued == 3600)
        #expect(jws.signature.count == 256)

        // Configured for it, it passes every check up to the key lookup; its key is not published
        // offline, so it ends there.
        let exampleAuthenticator = PubSubPushAuthenticator(
            configuration: .init(
                audience: "https://example.com", serviceAccountEmail: "gae-gcp@appspot.gserviceaccount.com"),
            fetch: endpoint.fetch)
        let error = await #expect(throws: PubSubPushAuthenticationError.self) {
            try await exampleAuthenticator.authenticate(
                authorizationHeader: header, now: Date(timeIntervalSince1970: Double(issued + 60)))
        }
        #expect(error?.code == .unknownKey)
        #expect(
            error?.message
                == #"no signing key has kid "7d680d8c70d44e947133cbd499ebc1a61c3d5abc", even after a refresh"#)
        #expect(error?.description.contains(String(header.suffix(40))) == false)
    }
}
