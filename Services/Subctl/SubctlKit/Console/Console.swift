public import Crypto
public import HTTP
public import RPC
public import Sockets
import Wire

/// The support console: web pages on the operator's own machine that call the three services
/// through the operator's own transports (and so under the operator's certificate and the
/// services' allow rules). `respond(to:)` answers one request; `ConsoleServer` serves it over HTTP.
///
/// What it guards, on every request: the `Host` must be the console's own address (DNS
/// rebinding); every page but the login and the static files needs a session (unless
/// `requireLogin` is off); every POST needs the session, its CSRF token, and a same-origin
/// `Origin` and `Sec-Fetch-Site` when the browser sends them. Every answer carries
/// `ConsoleResponse.securityHeaders`.
public final class Console: Sendable {
    /// The services the console calls, and the deadline of each call.
    public struct Services: Sendable {
        public var ledger: any ClientTransport
        public var verifier: any ClientTransport
        public var entitlement: any ClientTransport
        public var timeout: Duration

        public init(
            ledger: any ClientTransport, verifier: any ClientTransport, entitlement: any ClientTransport,
            timeout: Duration = CallOptions.defaultTimeout
        ) {
            self.ledger = ledger
            self.verifier = verifier
            self.entitlement = entitlement
            self.timeout = timeout
        }
    }

    let services: Services
    /// The operator's name (the certificate's first name, or `no TLS`).
    let identity: String
    /// The role the ledger reported (`HealthResponse.caller_read_only`): no actions, no payloads.
    let readOnly: Bool
    /// The `Host` values the console answers to.
    let hosts: [String]
    /// The `Origin` values a POST may carry: the listen address's, and `--origin`'s.
    let origins: [String]
    /// `--origin`'s, where people open the console; nil: the listen address.
    let publicOrigin: String?
    /// The session cookie's name (`ConsoleSessions.cookieName(port:)`).
    let cookieName: String
    /// Whether pages need a session made by the login address.
    let requireLogin: Bool
    /// The sessions and secrets of this start.
    public let sessions: ConsoleSessions
    /// The trust anchors App Store payloads are verified against (`--apple-root`).
    let appleAnchors: [X509Certificate]
    /// Epoch milliseconds now.
    let now: @Sendable () -> Int64

    /// A console at `address` (the port it listens on, not 0) calling `services` as `identity`.
    public init(
        services: Services, identity: String, readOnly: Bool, address: HostPort, requireLogin: Bool,
        origin: ConsoleOrigin? = nil, sessions: ConsoleSessions = ConsoleSessions(),
        appleAnchors: [X509Certificate] = [], now: @escaping @Sendable () -> Int64
    ) {
        self.services = services
        self.identity = identity
        self.readOnly = readOnly
        self.cookieName = ConsoleSessions.cookieName(port: address.port)
        let own = [address.description, "localhost:\(address.port)"]
        self.hosts = own + (origin.map { [$0.host] } ?? [])
        self.origins = own.map { "http://\($0)" } + (origin.map { [$0.origin] } ?? [])
        self.publicOrigin = origin?.origin
        self.requireLogin = requireLogin
        self.sessions = sessions
        self.appleAnchors = appleAnchors
        self.now = now
    }

    /// The address to open (`--origin`'s when given): the login address with the token, or `/`
    /// without login.
    public func readyURL(_ address: HostPort) -> String {
        (publicOrigin ?? "http://\(address)") + "/"
            + (requireLogin ? "login?token=\(sessions.loginToken)" : "")
    }

    /// Answers one request (never throws: a failed call is shown on the page).
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        var response = await route(request)
        ConsoleResponse.secure(&response)
        return response
    }

    private func route(_ request: HTTPRequest) async -> HTTPResponse {
        guard let host = request.headers["host"], hosts.contains(host.lowercased()) else {
            return ConsoleResponse.plain(
                "refused: this console answers only at http://\(hosts[0])/ (the Host header names another address)",
                status: 403)
        }
        if request.method == "GET", let asset = ConsoleAssets.file(request.path) {
            return asset
        }
        if request.method == "GET" && request.path == "/login" {
            return login(request)
        }
        let cookie = ConsoleResponse.cookie(cookieName, in: request.headers["cookie"])
        var session = cookie.flatMap { sessions.isOpen($0) ? $0 : nil }
        if request.method == "POST" {
            guard let session, sameOrigin(request, session: session) else {
                return page(
                    "Refused", session: nil,
                    [.element("p", ["id": "error", "role": "alert"], text: "cross-site request refused")], status: 403)
            }
            return await post(request, session: session)
        }
        var setCookie: String?
        if session == nil {
            guard !requireLogin else { return loginNeeded() }
            let opened = sessions.open()
            session = opened
            setCookie = ConsoleResponse.sessionCookie(opened, name: cookieName)
        }
        guard request.method == "GET", let session else {
            return page(
                "Not found", session: nil, [.element("p", text: "Only GET and POST are answered here.")], status: 405)
        }
        var response = await get(request, session: session)
        if let setCookie { response.headers.append(("Set-Cookie", setCookie)) }
        return response
    }

    /// `/login?token=T`: with this start's token, a new session and a redirect to `/`.
    private func login(_ request: HTTPRequest) -> HTTPResponse {
        guard let token = request.query["token"], sessions.isLoginToken(token) else { return loginNeeded() }
        return HTTPResponse(
            status: 303,
            headers: [
                ("Location", "/"), ("Set-Cookie", ConsoleResponse.sessionCookie(sessions.open(), name: cookieName)),
            ])
    }

    private func loginNeeded() -> HTTPResponse {
        page(
            "Log in", session: nil,
            [
                .element("h1", text: "Log in"),
                .element(
                    "p", ["id": "login-needed"],
                    text:
                        "Open the address `subctl console` printed when it started (http://\(hosts[0])/login?token=…): "
                        + "it logs this browser in."),
            ], status: 401)
    }

    /// A POST's CSRF checks: the form's token is the session's, and the browser's `Origin` and
    /// `Sec-Fetch-Site`, when sent, name this console.
    private func sameOrigin(_ request: HTTPRequest, session: String) -> Bool {
        if let origin = request.headers["origin"], !origins.contains(origin.lowercased()) { return false }
        if let site = request.headers["sec-fetch-site"], site != "same-origin" { return false }
        guard let token = FormFields(body: request.body)["csrf"] else { return false }
        return sessions.isCSRFToken(token, for: session)
    }

    private func get(_ request: HTTPRequest, session: String) async -> HTTPResponse {
        switch request.path {
        case "/": return home(session: session)
        case "/find": return await find(request.query["q"] ?? "", session: session)
        case "/queues": return await queues(session: session)
        case "/payload": return await payload(request.query, session: session)
        default:
            if request.path.hasPrefix("/account/") {
                let id = String(request.path.dropFirst("/account/".count))
                return await account(id, at: request.query["at"], session: session)
            }
            return page(
                "Not found", session: session,
                [.element("p", ["id": "error", "role": "alert"], text: "No such page.")],
                status: 404)
        }
    }

    private func post(_ request: HTTPRequest, session: String) async -> HTTPResponse {
        guard request.path.hasPrefix("/action/"),
            let action = ConsoleAction(rawValue: String(request.path.dropFirst("/action/".count)))
        else {
            return page(
                "Not found", session: session,
                [.element("p", ["id": "error", "role": "alert"], text: "No such action.")], status: 404)
        }
        guard !readOnly else {
            return page(
                "Refused", session: session,
                [
                    .element(
                        "p", ["id": "error", "role": "alert"],
                        text: "refused: \(identity) has the read-only role, which may not act")
                ], status: 403)
        }
        return await perform(action, FormFields(body: request.body), session: session)
    }

    /// Calls `method` of `transport` with the console's deadline.
    func call<Request: ProtoMessage, Response: ProtoMessage>(
        _ transport: any ClientTransport, _ method: String, _ request: Request, as: Response.Type
    ) async throws(SubctlError) -> Response {
        try await transport.call(method, request, as: Response.self, timeout: services.timeout).response
    }
}
