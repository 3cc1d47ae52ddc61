import Crypto
import Synchronization

/// The console's sessions and the secrets of one start: the login token `subctl console`
/// prints, the key CSRF tokens are made with, and each session's state (the outcome of the last
/// action to show once, the recent searches). Nothing outlives the process.
public final class ConsoleSessions: Sendable {
    /// What the page after an action shows once.
    public enum Outcome: Sendable, Equatable {
        /// What the service answered.
        case result(String)
        /// Why nothing was done, or the service's error.
        case error(String)
    }

    struct Session {
        var outcome: Outcome?
        var recent: [String] = []
    }

    /// The cookie that carries the session id of the console on `port`. Browsers keep cookies
    /// per host, not per port: two consoles on one machine (an operator's and a read-only one)
    /// would otherwise log each other out.
    public static func cookieName(port: Int) -> String { "console_session_\(port)" }
    /// How many recent searches a session keeps.
    static let recentLimit = 10
    /// The most sessions kept; the oldest goes when a new one would pass it.
    static let sessionLimit = 1000

    /// 64 hex digits, printed in the login address.
    public let loginToken: String
    private let csrfKey: [UInt8]
    private let sessions = Mutex<(byID: [String: Session], order: [String])>(([:], []))

    /// Sessions with fresh random secrets; tests give their own.
    public init(loginToken: String = ConsoleSessions.randomHex(), csrfKey: [UInt8] = ConsoleSessions.randomBytes()) {
        self.loginToken = loginToken
        self.csrfKey = csrfKey
    }

    /// 32 bytes from the system's cryptographic generator.
    public static func randomBytes(_ count: Int = 32) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// 32 random bytes as 64 hex digits.
    public static func randomHex() -> String { Hex.encode(randomBytes()) }

    /// Whether `token` is the login token, compared in constant time.
    public func isLoginToken(_ token: String) -> Bool {
        Digest.constantTimeEqual(Array(token.utf8), Array(loginToken.utf8))
    }

    /// A new session's id.
    public func open() -> String {
        let id = Self.randomHex()
        sessions.withLock { sessions in
            sessions.byID[id] = Session()
            sessions.order.append(id)
            if sessions.order.count > Self.sessionLimit {
                sessions.byID[sessions.order.removeFirst()] = nil
            }
        }
        return id
    }

    /// Whether `id` names a session of this start.
    public func isOpen(_ id: String) -> Bool { sessions.withLock { $0.byID[id] != nil } }

    /// The CSRF token of a session: HMAC-SHA256(the start's key, session id) in hex.
    public func csrfToken(for session: String) -> String {
        Hex.encode(Digest.hmacSHA256(key: csrfKey, message: Array(session.utf8)))
    }

    /// Whether `token` is the session's CSRF token, compared in constant time.
    public func isCSRFToken(_ token: String, for session: String) -> Bool {
        Digest.constantTimeEqual(Array(token.utf8), Array(csrfToken(for: session).utf8))
    }

    /// Keeps `outcome` for the session's next page.
    func keep(_ outcome: Outcome, for session: String) {
        sessions.withLock { $0.byID[session]?.outcome = outcome }
    }

    /// The outcome kept for the session, once.
    func takeOutcome(for session: String) -> Outcome? {
        sessions.withLock { $0.byID[session]?.outcome.take() }
    }

    /// Puts `search` first among the session's recent searches.
    func remember(search: String, for session: String) {
        sessions.withLock { sessions in
            guard var recent = sessions.byID[session]?.recent else { return }
            recent.removeAll { $0 == search }
            recent.insert(search, at: 0)
            sessions.byID[session]?.recent = Array(recent.prefix(Self.recentLimit))
        }
    }

    /// The session's recent searches, newest first.
    func recent(for session: String) -> [String] { sessions.withLock { $0.byID[session]?.recent ?? [] } }
}
