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
