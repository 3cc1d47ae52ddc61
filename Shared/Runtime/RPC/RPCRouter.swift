import CShims
import Foundation
import Glibc
public import Wire

/// How a method runs.
public enum RPCHandler: Sendable {
    /// Runs on the event loop thread that read the request, with the payload bytes in place,
    /// and appends the response payload to the (empty) buffer it is given. For work that is in
    /// memory and short: it must not block or take long.
    /// It gets no request context: it answers before any deadline could pass, and the access
    /// policy has admitted the caller before it runs.
    case inline(@Sendable (UnsafeRawBufferPointer, inout [UInt8]) throws -> Void)
    /// Runs as a task; its reply is written when it returns.
    case unary(@Sendable (RPCRequestContext, [UInt8]) async throws -> [UInt8])
    /// Starts on the event loop thread like `inline` and answers later, from any thread,
    /// through its `RPCResponder`: for work handed to a thread of its own (a storage writer)
    /// without a task and two thread hops in between. The start must not block.
    case deferred(@Sendable (RPCRequestContext, UnsafeRawBufferPointer, RPCResponder) -> Void)
    /// Runs as a task that sends any number of messages, paced by the client's credit.
    case serverStream(@Sendable (RPCRequestContext, [UInt8], ServerStreamWriter) async throws -> Void)
}

/// Told the request payloads of one method that arrived together (two or more, in one read
/// that starts at a frame boundary, from a caller the access policy admits), before they are
/// handled one by one, so that it can start loading into cache what they will read (the lookups of a
/// pipelined batch then overlap instead of waiting on memory in turn). It runs on the event
/// loop thread, must change nothing, and may ignore payloads it cannot read: the handler
/// decides what each request means.
public typealias RPCPrefetch = @Sendable (UnsafeBufferPointer<UnsafeRawBufferPointer>) -> Void

/// What one request of a method may cost before its handler sees it: its frame's length, and
/// what its payload may make protobuf-c build (checked on the wire bytes before anything is
/// unpacked). Requests past either are refused with RESOURCE_EXHAUSTED.
public struct RPCMethodLimits: Sendable, Equatable {
    /// The longest request frame; nil for the server's `maxFrameLength`.
    public var maxRequestBytes: Int?
    public var budget: DecodeBudget

    public init(maxRequestBytes: Int?, budget: DecodeBudget = .standard) {
        self.maxRequestBytes = maxRequestBytes
        self.budget = budget
    }

    /// A request of a few fields: 64 KiB frames.
    public static let standard = RPCMethodLimits(maxRequestBytes: 64 * 1024)
    /// A request that carries signed store data or many records: frames up to the server's maximum.
    public static let large = RPCMethodLimits(maxRequestBytes: nil)
}

/// The methods a server offers, registered before it starts.
public final class RPCRouter: @unchecked Sendable {  // written only before the server starts, then read-only
    struct Entry {
        let name: String
        let handler: RPCHandler
        /// What a caller with the read-only role runs: the same method, its answers redacted
        /// (`ProtoMessage.redacted()`). Nil for a method that changes something (not `@read` in
        /// the .proto), and for one registered without its response type: such a caller is
        /// refused it.
        let readOnlyHandler: RPCHandler?
        let index: Int
        let prefetch: RPCPrefetch?
        let limits: RPCMethodLimits

        /// The handler for a caller with the read-only role or without it.
        func handler(readOnly: Bool) -> RPCHandler { readOnly ? readOnlyHandler ?? handler : handler }
    }

    private(set) var entries: [Entry] = []
    /// Every method's UTF-8 name end to end, and where each ends: looked up per call, in plain
    /// bytes (no reference counting).
    private var nameBytes: [UInt8] = []
    private var nameEnds: [Int] = []
    /// Whether any method has a prefetch.
    private(set) var prefetches = false

    public init() {}

    /// Registers a raw handler under a full method name, with the prefetch for batches of its
    /// requests if it has one. Registering a name twice is a programming error. A raw handler
    /// decodes its own payload: it does so within `limits.budget` only if it asks
    /// `DecodeBudget.$current` for it.
    /// A caller with the read-only role is refused a method registered this way: without its
    /// response type its answers cannot be redacted.
    public func register(
        _ method: String, _ handler: RPCHandler, limits: RPCMethodLimits = .standard, prefetch: RPCPrefetch? = nil
    ) {
        register(method, handler, readOnly: nil, limits: limits, prefetch: prefetch)
    }

    /// Registers `handler`, and `readOnly` for the callers with the read-only role when the
    /// method changes nothing (`@read` in the .proto; otherwise such callers are refused it).
    func register(
        _ method: String, _ handler: RPCHandler, readOnly: RPCHandler?, limits: RPCMethodLimits,
        prefetch: RPCPrefetch?
    ) {
        precondition(!entries.contains { $0.name == method }, "method \(method) registered twice")
        let readOnly = ProtoSchema.readMethodNames.contains(method) ? readOnly : nil
        entries.append(
            Entry(
                name: method, handler: handler, readOnlyHandler: readOnly, index: entries.count, prefetch: prefetch,
                limits: limits))
        nameBytes.append(contentsOf: method.utf8)
        nameEnds.append(nameBytes.count)
        prefetches = prefetches || prefetch != nil
    }

    /// Registers an in-memory method that runs on the event loop thread.
    public func inline<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, limits: RPCMethodLimits = .standard, _ body: @escaping @Sendable (Request) throws -> Response
    ) {
        inline(method, limits: limits, byRole: { request, _ in try body(request) })
    }

    /// Registers an in-memory method that runs on the event loop thread and answers according to
    /// whether the caller has the read-only role (`callerReadOnly`); that caller's answers are
    /// redacted besides.
    public func inline<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, limits: RPCMethodLimits = .standard,
        byRole body: @escaping @Sendable (Request, _ callerReadOnly: Bool) throws -> Response
    ) {
        let budget = limits.budget
        register(
            method,
            .inline({ bytes, output in
                try body(try Self.decode(bytes, within: budget), false).serialize(appendingTo: &output)
            }),
            readOnly: .inline({ bytes, output in
                do {
                    try body(try Self.decode(bytes, within: budget), true).redacted().serialize(appendingTo: &output)
                } catch let later as RPCHandOff {
                    throw later.redacting(Response.self)
                }
            }), limits: limits, prefetch: nil)
    }

    /// Registers a method that runs as a task.
    public func unary<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, limits: RPCMethodLimits = .standard,
        _ body: @escaping @Sendable (RPCRequestContext, Request) async throws -> Response
    ) {
        let budget = limits.budget
        register(
            method,
            .unary({ context, bytes in
                try await body(context, try Self.decode(bytes, within: budget)).serialized()
            }),
            readOnly: .unary({ context, bytes in
                try await body(context, try Self.decode(bytes, within: budget)).redacted().serialized()
            }), limits: limits, prefetch: nil)
    }

    /// Registers a method that starts on the event loop thread and answers through `respond`,
    /// once, from whichever thread finishes the work.
    public func deferred<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, limits: RPCMethodLimits = .standard,
        _ body:
            @escaping @Sendable (
                RPCRequestContext, Request, _ respond: @escaping @Sendable (Result<Response, any Error>) -> Void
            ) -> Void
    ) {
        let budget = limits.budget
        func handler(redacting: Bool) -> RPCHandler {
            .deferred({ context, bytes, responder in
                let request: Request
                do {
                    request = try Self.decode(bytes, within: budget)
                } catch {
                    return responder.fail(error)
                }
                body(context, request) { result in
                    switch result {
                    case .success(let response):
                        responder.succeed(redacting ? response.redacted().serialized() : response.serialized())
                    case .failure(let error): responder.fail(error)
                    }
                }
            })
        }
        register(method, handler(redacting: false), readOnly: handler(redacting: true), limits: limits, prefetch: nil)
    }

    /// Registers a server-streaming method.
    public func serverStream<Request: ProtoMessage, Response: ProtoMessage>(
        _ method: String, limits: RPCMethodLimits = .standard,
        _ body: @escaping @Sendable (RPCRequestContext, Request, ServerStreamSender<Response>) async throws -> Void
    ) {
        let budget = limits.budget
        func handler(redacting: Bool) -> RPCHandler {
            .serverStream({ context, bytes, writer in
                try await body(
                    context, try Self.decode(bytes, within: budget),
                    ServerStreamSender(writer: writer, redacting: redacting))
            })
        }
        register(method, handler(redacting: false), readOnly: handler(redacting: true), limits: limits, prefetch: nil)
    }

    /// A request decoded within `budget` (`DecodeBudget.standard` is what every decode gets).
    static func decode<Request: ProtoMessage>(_ bytes: UnsafeRawBufferPointer, within budget: DecodeBudget) throws
        -> Request
    {
        if budget == .standard { return try Request(serialized: bytes) }
        return try DecodeBudget.$current.withValue(budget) { try Request(serialized: bytes) }
    }

    static func decode<Request: ProtoMessage>(_ bytes: [UInt8], within budget: DecodeBudget) throws -> Request {
        try bytes.withUnsafeBytes { raw in try decode(raw, within: budget) }
    }

    /// Every registered method name.
    public var methodNames: [String] { entries.map(\.name) }

    /// The methods a caller with the read-only role (`RPC_READ_ONLY`) may call, in registration
    /// order: those that change nothing (`@read`) and whose answers are redacted for it.
    public var readOnlyMethodNames: [String] { entries.filter { $0.readOnlyHandler != nil }.map(\.name) }

    /// The index in `entries` of the method named `name`, for a call that did not come in a frame.
    func index(named name: String) -> Int? { entries.firstIndex { $0.name == name } }

    /// The index in `entries` of the method with this UTF-8 name.
    func index(of name: UnsafeBufferPointer<UInt8>) -> Int? {
        nameBytes.withUnsafeBufferPointer { bytes in
            var start = 0
            for (index, end) in nameEnds.enumerated() {
                if end - start == name.count
                    && (name.count == 0 || memcmp(bytes.baseAddress! + start, name.baseAddress!, name.count) == 0)
                {
                    return index
                }
                start = end
            }
            return nil
        }
    }
}

/// Typed face of a `ServerStreamWriter`.
public struct ServerStreamSender<Message: ProtoMessage>: Sendable {
    let writer: ServerStreamWriter
    /// The caller has the read-only role: each message is sent redacted.
    var redacting = false

    /// Sends one message; suspends while the client has granted no credit. Throws
    /// `RPCError(.cancelled)` once the call is over (client cancelled, deadline, disconnect).
    public func send(_ message: Message) async throws {
        try await writer.send(redacting ? message.redacted().serialized() : message.serialized())
    }
}
