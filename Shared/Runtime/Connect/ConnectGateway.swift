import Foundation
public import HTTP
import Observability
import ProtoJSON
public import RPC
public import Wire

/// The Connect protocol (connectrpc.com) for unary calls, on an HTTP listener: every unary
/// method of an RPC server at `POST /<package>.<Service>/<Method>`, the request as proto3 JSON
/// (`Content-Type: application/json`) or binary protobuf (`application/proto`) and the answer in
/// the same encoding. The call is the RPC server's own (`RPCServer.callBlocking`): the same
/// handler, request limit, decode budget, deadline, access policy and metrics as over the framed
/// protocol. An error is Connect's JSON error body with Connect's HTTP status for its code; so is
/// every other answer of the listener that is not a call's (`refusal(_:methods:openAPI:)`: an
/// unknown path, a wrong HTTP method, a body over the limit), and an unsupported `Content-Type`
/// is 415 with `Accept-Post`.
///
/// Headers: `Connect-Timeout-Ms` (1 to 10 digits) is the call's timeout, as the framed
/// protocol's `timeout_ms`; `Connect-Protocol-Version` must be `1` when sent; a body may be gzip
/// (`Content-Encoding: gzip`, inflated up to `maxBodyBytes`); answers are sent uncompressed.
/// Server streams and Connect's `GET` form are not offered here: they are the framed protocol's.
public struct ConnectGateway: Sendable {
    /// One method as the gateway serves it: its full name and its messages' full names.
    struct Route: Sendable {
        let method: String
        let input: String
        let output: String
    }

    private let server: RPCServer
    /// The most a gzip body may inflate to (the HTTP listener's body limit).
    private let maxBodyBytes: Int
    private let identify: @Sendable (HTTPRequest) -> Result<[String]?, RPCError>

    /// A gateway to `server`'s unary methods. `identify` names the caller of a request (the
    /// identities its API key or certificate stands for; nil where nothing authenticates
    /// callers) or refuses it (UNAUTHENTICATED for a missing or wrong key); the server's access
    /// policy then decides.
    public init(
        server: RPCServer, maxBodyBytes: Int = 1 << 20,
        identify: @escaping @Sendable (HTTPRequest) -> Result<[String]?, RPCError> = { _ in .success(nil) }
    ) {
        self.server = server
        self.maxBodyBytes = maxBodyBytes
        self.identify = identify
    }

    /// The routes for the server's unary methods that `proto/` describes.
    var routes: [Route] {
        let schema = Dictionary(
            ProtoSchema.services.flatMap { service in
                service.methods.map { ("\(service.fullName)/\($0.name)", $0) }
            }, uniquingKeysWith: { first, _ in first })
        return server.unaryMethodNames.compactMap { name in
            schema[name].map { Route(method: name, input: $0.input, output: $0.output) }
        }
    }

    /// Routes `POST /<method>` on `http` for every unary method, and `GET /openapi.json` to the
    /// service's OpenAPI description (generated from `proto/`, as `proto/openapi/` holds it).
    public func install(on http: HTTPServer) {
        let routes = self.routes
        for route in routes {
            http.route("POST", "/\(route.method)") { [self] request in handle(request, route) }
        }
        let services = Set(routes.map { $0.method.split(separator: "/")[0] })
        var openAPI = false
        if services.count == 1, let document = OpenAPIDocuments.byService[String(services.first!)] {
            http.route("GET", "/openapi.json") { _ in .json(document) }
            openAPI = true
        }
        let methods = routes.map(\.method)
        http.answerRefusals { [openAPI] refusal in Self.refusal(refusal, methods: methods, openAPI: openAPI) }
    }

    /// The answer to one request for `route`.
    func handle(_ request: HTTPRequest, _ route: Route) -> HTTPResponse {
        let codec: Codec
        switch Codec(contentType: request.headers["content-type"]) {
        case .some(let found): codec = found
        case .none:
            var response = Self.error(
                RPCError(
                    .unknown,
                    "Content-Type must be application/json or application/proto, got "
                        + "\"\(request.headers["content-type"]?.prefix(100) ?? "")\": send Content-Type: "
                        + "application/json with the request in proto3 JSON"))
            response.status = 415
            response.headers.append(("Accept-Post", "application/json, application/proto"))
            return response
        }
        switch answer(request, route, codec) {
        case .success(let body):
            return HTTPResponse(status: 200, headers: [("Content-Type", codec.contentType)], body: body)
        case .failure(let error):
            var response = Self.error(error)
            if error.code == .unimplemented, request.headers["content-encoding"] != nil {
                response.headers.append(("Accept-Encoding", "gzip, identity"))
            }
            return response
        }
    }

    private func answer(_ request: HTTPRequest, _ route: Route, _ codec: Codec) -> Result<[UInt8], RPCError> {
        if let version = request.headers["connect-protocol-version"], version != "1" {
            return .failure(
                RPCError(
                    .invalidArgument, "Connect-Protocol-Version \"\(version.prefix(20))\" is not supported: send 1"))
        }
        // The caller is known before anything of the body is read: a gzip body costs its
        // inflation, which an unauthenticated caller does not get.
        let identities: [String]?
        switch identify(request) {
        case .success(let names): identities = names
        case .failure(let error): return .failure(error)
        }
        var body = request.body
        switch request.headers["content-encoding"]?.lowercased() {
        case nil, "identity": break
        case "gzip":
            do { body = try Gzip.inflate(body, limit: maxBodyBytes) } catch { return .failure(error) }
        case let encoding?:
            return .failure(
                RPCError(
                    .unimplemented,
                    "Content-Encoding \"\(encoding.prefix(40))\" is not supported: send gzip or identity"))
        }
        var timeout: UInt64 = 0
        if let text = request.headers["connect-timeout-ms"] {
            guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let milliseconds = UInt64(text)
            else {
                return .failure(
                    RPCError(.invalidArgument, "Connect-Timeout-Ms must be 1 to 10 digits, got \"\(text.prefix(20))\""))
            }
            timeout = max(1, milliseconds)
        }
        let payload: [UInt8]
        switch codec {
        case .proto: payload = body
        case .json:
            do {
                payload = body.isEmpty ? [] : try ProtoJSON.encode(json: body, as: route.input)
            } catch {
                return .failure(error)
            }
        }
        let caller = RPCCaller(identities: identities, peer: request.clientAddress)
        let result = server.callBlocking(route.method, payload: payload, timeoutMilliseconds: timeout, caller: caller)
        guard case .success(let response) = result, codec == .json else { return result }
        do {
            return .success(
                try ProtoJSON.decodeToJSONBytes(response, as: route.output, pretty: false, defaults: .boolsAndLists))
        } catch {
            return .failure(RPCError(.internal, "the answer could not be written as JSON: \(error.message)"))
        }
    }

    /// Connect's error body for `error`, with the HTTP status of its code.
    static func error(_ error: RPCError) -> HTTPResponse {
        var body = #"{"code":"#
        JSONText.appendString(error.code.connectName, to: &body)
        if !error.message.isEmpty {
            body += #","message":"#
            JSONText.appendString(error.message, to: &body)
        }
        body += "}"
        return .json(body, status: error.code.connectHTTPStatus)
    }
}

/// A unary body's encoding.
enum Codec: Sendable, Equatable {
    case json
    case proto

    /// The codec a `Content-Type` names (parameters such as `charset` aside), nil for another.
    /// The media type is the first piece between semicolons that is not empty, without the
    /// white space around it, in any case.
    init?(contentType: String?) {
        guard let contentType else { return nil }
        let mediaType: String?
        if contentType.utf8.allSatisfy({ $0 < 0x80 }) {
            mediaType = Self.asciiMediaType(contentType)
        } else {
            // Unicode white space and case, as Foundation sees them.
            mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }
        }
        switch mediaType {
        case "application/json": self = .json
        case "application/proto": self = .proto
        default: return nil
        }
    }

    var contentType: String { self == .json ? "application/json" : "application/proto" }

    /// The media type of an ASCII `Content-Type`, lowercased, trimmed of spaces and tabs.
    private static func asciiMediaType(_ contentType: String) -> String? {
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        for piece in contentType.utf8.split(separator: UInt8(ascii: ";")) {
            guard let first = piece.firstIndex(where: { !isBlank($0) }) else { return "" }
            let last = piece.lastIndex(where: { !isBlank($0) })!
            return String(
                decoding: piece[first...last].map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        return nil
    }
}

extension StatusCode {
    /// Connect's name for the code: gRPC's in lower case (`not_found`), `canceled` spelt so;
    /// `unknown` for a number without a name.
    public var connectName: String {
        switch self {
        case .cancelled: "canceled"
        case _ where StatusCode.allKnown.contains(self) && self != .ok: name.lowercased()
        default: "unknown"
        }
    }

    /// The HTTP status Connect gives an error with this code.
    public var connectHTTPStatus: Int {
        switch self {
        case .cancelled: 499
        case .invalidArgument, .failedPrecondition, .outOfRange: 400
        case .deadlineExceeded: 504
        case .notFound: 404
        case .alreadyExists, .aborted: 409
        case .permissionDenied: 403
        case .resourceExhausted: 429
        case .unimplemented: 501
        case .unavailable: 503
        case .unauthenticated: 401
        default: 500
        }
    }
}
