public import HTTP
import RPC
import Wire

extension ConnectGateway {
    /// Connect's error body for a request the HTTP listener refuses before any method is called
    /// (`HTTPRefusal`), with the refusal's HTTP status. The code is the one the Connect protocol
    /// has a client infer from that status when a body has none ("HTTP to Error Code":
    /// `unimplemented` for 404, `unknown` for 405 and 413), so that a client reading the body and
    /// one reading the status agree; the message says what to change. `methods` are the full
    /// names of the methods the listener serves (`package.Service/Method`).
    public static func refusal(_ refusal: HTTPRefusal, methods: [String], openAPI: Bool) -> HTTPResponse {
        var response = error(refusalError(refusal, methods: methods, openAPI: openAPI))
        response.status = refusal.status
        return response
    }

    private static func refusalError(_ refusal: HTTPRefusal, methods: [String], openAPI: Bool) -> RPCError {
        switch refusal {
        case .notFound(_, let path, _):
            return RPCError(.unimplemented, notFound(path, methods: methods, openAPI: openAPI))
        case .methodNotAllowed(let method, let path, let allow):
            let name = String(path.dropFirst())
            let message =
                methods.contains(name)
                ? "\(name) takes POST, not \(shown(method)): post the request as the body, with Content-Type: "
                    + "application/json (proto3 JSON) or application/proto"
                : "\(shown(path)) takes \(allow.joined(separator: " or ")), not \(shown(method))"
            return RPCError(.unknown, message)
        case .tooLarge(let limit):
            return RPCError(.unknown, "the request body exceeds this listener's limit of \(limit) bytes")
        }
    }

    /// What a 404 says: the exact path when `path` is one of `methods` but for case; the service
    /// and its HTTP port when it names a method of another service of this system; else what
    /// this listener serves.
    private static func notFound(_ path: String, methods: [String], openAPI: Bool) -> String {
        let name = path.hasPrefix("/") ? String(path.dropFirst()) : path
        let folded = name.lowercased()
        if let exact = methods.first(where: { $0.lowercased() == folded }) {
            return "no method at \(shown(path)): paths are case-sensitive; use /\(exact)"
        }
        let ownServices = Set(methods.map { String($0.prefix { $0 != "/" }) }).sorted()
        let own = ownServices.count == 1 ? SystemServices.entry(serving: ownServices[0]) : nil
        let here =
            ownServices.isEmpty
            ? "this listener serves no method"
            : "this listener\(own.map { " (the \($0.name) service's)" } ?? "") serves "
                + ownServices.map { "POST /\($0)/<Method>" }.joined(separator: " and ")
                + (openAPI ? ", listed at GET /openapi.json" : "")
        for service in ProtoSchema.services {
            for method in service.methods where "\(service.fullName)/\(method.name)".lowercased() == folded {
                let full = "\(service.fullName)/\(method.name)"
                let entry = SystemServices.entry(serving: service.fullName)
                if method.isServerStreaming {
                    let port =
                        entry.map { " (the \($0.name) service's RPC_LISTEN, port \($0.rpcPort) by default)" } ?? ""
                    return "\(full) is a server stream: it is served over the framed protocol\(port), not over HTTP"
                }
                if ownServices.contains(service.fullName) {
                    return "\(full) is not served by this listener; \(here)"
                }
                guard let entry else { break }
                return "\(full) is the \(entry.name) service's: call it on that service's HTTP listener "
                    + "(HTTP_LISTEN, port \(entry.httpPort) by default); \(here)"
            }
        }
        return "no method at \(shown(path)): \(here)"
    }

    /// A piece of the request to show in a message, cut at 100 characters.
    private static func shown(_ text: String) -> String {
        text.count > 100 ? String(text.prefix(100)) + "…" : text
    }
}
