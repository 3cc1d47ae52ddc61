import Foundation
import FoundationNetworking
@_exported public import ServiceProcessKit
import Testing

/// GET over HTTP/1.1 on loopback; returns the status and body.
public func httpGet(port: Int, path: String) async throws -> (Int, String) {
    let url = try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
    let (data, status) = try await loopbackExchange(URLRequest(url: url))
    return (status, String(decoding: data, as: UTF8.self))
}

/// POSTs `body` to 127.0.0.1:`port``path`; returns the status and the body.
public func httpPost(port: Int, path: String, body: String) async throws -> (Int, String) {
    var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)\(path)")))
    request.httpMethod = "POST"
    request.httpBody = Data(body.utf8)
    let (data, status) = try await loopbackExchange(request)
    return (status, String(decoding: data, as: UTF8.self))
}

/// What a Connect call over HTTP answered: the status, the headers (lowercased names) and the body.
public struct ConnectAnswer: Sendable {
    public let status: Int
    public let headers: [String: String]
    public let body: [UInt8]
    public var contentType: String? { headers["content-type"] }
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// POSTs `body` to 127.0.0.1:`port`/`method` (a Connect unary call) with `Content-Type`
/// `contentType` and `headers`, on a connection of its own; sends `httpMethod` (without a body
/// for `GET`) in place of `POST` when given.
public func connectCall(
    port: Int, method: String, body: [UInt8], contentType: String = "application/json", headers: [String: String] = [:],
    httpMethod: String = "POST"
) async throws -> ConnectAnswer {
    var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)/\(method)")))
    request.httpMethod = httpMethod
    if httpMethod != "GET" { request.httpBody = Data(body) }
    request.setValue(contentType, forHTTPHeaderField: "Content-Type")
    request.setValue("close", forHTTPHeaderField: "Connection")
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    let http = response as? HTTPURLResponse
    var headers: [String: String] = [:]
    for (name, value) in http?.allHeaderFields ?? [:] {
        if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
    }
    return ConnectAnswer(status: http?.statusCode ?? 0, headers: headers, body: [UInt8](data))
}
