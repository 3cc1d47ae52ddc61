public import Foundation
public import FoundationNetworking

/// One HTTP/1.1 exchange on loopback over a connection of its own (`Connection: close`). Test
/// servers listen on port 0 and stop when their test ends, so a later server can get the same
/// port: a pooled keep-alive connection to the earlier one would be reused and die with "Empty
/// reply from server". Returns the body and the status (0 when the answer is not HTTP).
public func loopbackExchange(_ request: URLRequest) async throws -> (Data, Int) {
    var request = request
    request.setValue("close", forHTTPHeaderField: "Connection")
    let (data, response) = try await URLSession.shared.data(for: request)
    return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
}
