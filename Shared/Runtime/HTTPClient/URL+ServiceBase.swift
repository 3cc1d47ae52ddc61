public import Foundation

extension URL {
    /// Whether the URL may be a store API client's base or token URL: https with a host, or
    /// http to 127.0.0.1, ::1 or localhost (tests and simulators); never a user, password, query
    /// or fragment.
    public var isHTTPSOrLoopbackHTTP: Bool {
        guard let components = URLComponents(url: self, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), let host = components.host, !host.isEmpty,
            components.user == nil, components.password == nil, components.query == nil, components.fragment == nil
        else { return false }
        if scheme == "https" { return true }
        return scheme == "http" && ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host.lowercased())
    }
}
