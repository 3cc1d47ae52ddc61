public import HTTP

/// What every answer of the console carries, and its small pieces of HTTP: cookies, plain text.
public enum ConsoleResponse {
    /// The headers of every answer: a policy that allows the console's own script and style only
    /// (no inline script or style, no frames, no foreign form targets), no sniffing, no referrer,
    /// no caching.
    public static let securityHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"),
        // Not no-referrer: under it a browser sends `Origin: null` with a form's POST, and the
        // console could not tell its own forms from another site's.
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]

    /// Sets the security headers on `response`, replacing any of the same names.
    public static func secure(_ response: inout HTTPResponse) {
        let names = Set(securityHeaders.map { $0.0.lowercased() })
        response.headers.removeAll { names.contains($0.0.lowercased()) }
        response.headers += securityHeaders
    }

    /// A page as an answer.
    static func html(_ document: HTML, status: Int) -> HTTPResponse {
        .text(document.markup, status: status, contentType: "text/html; charset=utf-8")
    }

    /// Plain text, for the refusals made before any page.
    static func plain(_ text: String, status: Int) -> HTTPResponse { .text(text + "\n", status: status) }

    /// The `Set-Cookie` value of a session in cookie `name`.
    static func sessionCookie(_ session: String, name: String) -> String {
        "\(name)=\(session); HttpOnly; SameSite=Strict; Path=/"
    }

    /// The value of cookie `name` in a `Cookie` header (`a=1; b=2`), or nil.
    static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingSpaces == name { return String(pair[1].trimmingSpaces) }
        }
        return nil
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        guard let first = firstIndex(where: { $0 != " " }), let last = lastIndex(where: { $0 != " " }) else {
            return ""
        }
        return self[first...last]
    }
}
