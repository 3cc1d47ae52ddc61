import CShims
import Foundation
import Glibc
public import Wire

/// How a method runs.
public enum RPCHandler: Sendable {
    /// Runs on the event loop thread that read the request, with the payload bytes in place,
    /// and appends the response payload to the (empty) buffer it is given. For work that is in
    /// memory and short: it must not block or take long.
    case inline(@Sendable (RPCRequestContext, UnsafeRawBufferPointer, inout [UInt8]) throws -> Void)
    /// Runs as a task; its reply is written when it returns.
    case unary(@Sendable (RPCRequestContext, [UInt8]) async throws -> [UInt8])
    /// Starts on the event loop thread like `inline` and answers later, from any thread,
    /// through its `RPCResponder`: for work handed to a thread of its own (a storage writer)
    /// without a task and two thread hops in between. The start must not block.
    case deferred(@Sendable (RPCRequestContext, UnsafeRawBufferPointer, RPCResponder) -> Void)
    /// Runs as a task that sends any number of messages, paced by the client's credit.
    case serverStream(@Sendable (RPCRequestContext, [UInt8], ServerStreamWriter) async throws -> Void)
}

/// The methods a server offers, registered before it starts.
public final class RPCRouter: @unchecked Sendable {  // written only before the server starts, then read-only
    struct Entry {
        let name: String
        let utf8: [UInt8]
        let handler: RPCHandler
        let index: Int
    }

    private(set) var entries: [Entry] = []

    public init() {}

    /// Registers a raw handler under a full method name. Registering a name twice is a
    /// programming error.
    public func register(_ method: String, _ handler: RPCHandler) {
        precondition(!entries.contains { $0.name == method }, "method \(method) registered twice")
        entries.append(Entry(name: method, utf8: Array(method.utf8), handler: handler, index: entries.count))
    }

    /// Registers an in-memory method that runs on the event loop thread.
    public func inline<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ body: @escaping @Sendable (RPCRequestContext, Request) throws -> Response
    ) {
        register(
            method,
            .inline({ context, bytes, output in
                output.append(contentsOf: try body(context, try Request(serialized: bytes)).serialized())
            }))
    }

    /// Registers a method that runs as a task.
    public func unary<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, _ body: @escaping @Sendable (RPCRequestContext, Request) async throws -> Response
    ) {
        register(
            method,
            .unary({ context, bytes in try await body(context, try Request(serialized: bytes)).serialized() }))
    }

    /// Registers a method that starts on the event loop thread and answers through `respond`,
    /// once, from whichever thread finishes the work.
    public func deferred<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String,
        _ body:
            @escaping @Sendable (
                RPCRequestContext, Request, _ respond: @escaping @Sendable (Result<Response, any Error>) -> Void
            ) -> Void
    ) {
        register(
            method,
            .deferred({ context, bytes, responder in
                let request: Request
                do {
                    request = try Request(serialized: bytes)
                } catch {
                    return responder.fail(error)
                }
                body(context, request) { result in
                    switch result {
                    case .success(let response): responder.succeed(response.serialized())
                    case .failure(let error): responder.fail(error)
                    }
                }
            }))
    }

    /// Registers a server-streaming method.
    public func serverStream<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String,
        _ body: @escaping @Sendable (RPCRequestContext, Request, ServerStreamSender<Response>) async throws -> Void
    ) {
        register(
            method,
            .serverStream({ context, bytes, writer in
                try await body(context, try Request(serialized: bytes), ServerStreamSender(writer: writer))
            }))
    }

    /// Every registered method name.
    public var methodNames: [String] { entries.map(\.name) }

    /// Finds a method by its UTF-8 name without allocating.
    func lookup(_ name: UnsafeBufferPointer<UInt8>) -> Entry? {
        for entry in entries where entry.utf8.count == name.count {
            let equal = entry.utf8.withUnsafeBufferPointer { stored in
                name.count == 0 || memcmp(stored.baseAddress!, name.baseAddress!, name.count) == 0
            }
            if equal { return entry }
        }
        return nil
    }
}

/// Typed face of a `ServerStreamWriter`.
public struct ServerStreamSender<Message: ProtoMessage>: Sendable {
    let writer: ServerStreamWriter

    /// Sends one message; suspends while the client has granted no credit. Throws
    /// `RPCError(.cancelled)` once the call is over (client cancelled, deadline, disconnect).
    public func send(_ message: Message) async throws {
        try await writer.send(message.serialized())
    }
}
