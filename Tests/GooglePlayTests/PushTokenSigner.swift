import Crypto
import Foundation
import GooglePlay
import Synchronization
import TestSupport

/// Signs Pub/Sub push tokens the way Google does, with an RSA key generated for the test and
/// published under `keyID`.
struct PushTokenSigner {
    static let audience = "https://push.example.com/google/rtdn"
    static let email = "rtdn-push@example-project.iam.gserviceaccount.com"
    /// The time tests authenticate at: 2025-06-15T15:06:40Z.
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    let keyID: String
    let privateKey: PrivateKey
    let publicKey: PublicKey

    /// A signer with test key `keyIndex` (keys are shared per process: generating one is slow).
    init(keyID: String, keyIndex: Int = 0) throws {
        self.keyID = keyID
        privateKey = try TestRSAKeys.key(keyIndex)
        publicKey = try PublicKey(pem: privateKey.publicKeyPEM())
    }

    /// This key as a member of a key set.
    var jwk: JSONWebKeySet.Key { JSONWebKeySet.Key(publicKey: publicKey, keyID: keyID) }

    /// The claims of a valid push token issued 10 minutes before `now`, with `changes` applied
    /// (a `NSNull` value removes the claim).
    static func claims(_ changes: [String: Any] = [:]) -> [String: Any] {
        let issued = Int(now.timeIntervalSince1970) - 600
        var claims: [String: Any] = [
            "aud": audience, "azp": "113774264463038321964", "email": email, "email_verified": true,
            "exp": issued + 3600, "iat": issued, "iss": "https://accounts.google.com", "sub": "113774264463038321964",
        ]
        for (name, value) in changes { claims[name] = value is NSNull ? nil : value }
        return claims
    }

    /// A compact RS256 JWS of `claims` with header `{"alg":"RS256","kid":…,"typ":"JWT"}` and
    /// `headerChanges` applied (a `NSNull` value removes the member).
    func token(_ claims: [String: Any] = Self.claims(), headerChanges: [String: Any] = [:]) throws -> String {
        var header: [String: Any] = ["alg": "RS256", "kid": keyID, "typ": "JWT"]
        for (name, value) in headerChanges { header[name] = value is NSNull ? nil : value }
        return try CompactJWS.sign(
            header: Self.json(header), payload: Self.json(claims), key: privateKey, algorithm: .rs256)
    }

    static func json(_ object: [String: Any]) throws -> [UInt8] {
        [UInt8](try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// `BASE64URL(header).BASE64URL(payload).` followed by `signature`, without signing.
    static func unsigned(header: [String: Any], claims: [String: Any], signature: [UInt8]) throws -> String {
        Base64URL.encode(try json(header)) + "." + Base64URL.encode(try json(claims)) + "."
            + Base64URL.encode(signature)
    }
}

/// The key set endpoint for tests: answers each fetch with the next of its documents (the last
/// one again once they run out) and counts the fetches and the sources asked.
final class FakeKeySetEndpoint: Sendable {
    struct Unreachable: Error, CustomStringConvertible {
        var description: String { "connection refused" }
    }

    /// One answer: a key set, raw bytes, or a failure.
    enum Answer: Sendable {
        case keys([JSONWebKeySet.Key])
        case bytes([UInt8])
        case failure
    }

    private struct State {
        var answers: [Answer]
        var fetches = 0
        var sources: [PubSubPushAuthenticator.KeySource] = []
    }

    private let state: Mutex<State>

    init(_ answers: [Answer]) {
        state = Mutex(State(answers: answers))
    }

    var fetches: Int { state.withLock { $0.fetches } }
    var sources: [PubSubPushAuthenticator.KeySource] { state.withLock { $0.sources } }

    /// Sets what the following fetches answer.
    func answer(_ answers: [Answer]) { state.withLock { $0.answers = answers } }

    /// The `PubSubPushAuthenticator.Fetch` to give the authenticator.
    var fetch: PubSubPushAuthenticator.Fetch {
        { [self] source, _ in
            let answer = state.withLock { state -> Answer in
                state.fetches += 1
                state.sources.append(source)
                return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
            }
            switch answer {
            case .keys(let keys): return JSONWebKeySet(keys: keys).json()
            case .bytes(let bytes): return bytes
            case .failure: throw Unreachable()
            }
        }
    }
}
