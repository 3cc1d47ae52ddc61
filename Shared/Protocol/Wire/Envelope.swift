internal import CProto
internal import CProtobufC
import Glibc

/// One decoded envelope, as a view into the frame it came from. Its buffers are valid only
/// inside the `Envelope.withDecoded` call that produced it; copy what must outlive it.
public struct EnvelopeView {
    public let callID: UInt64
    /// Nil when the number is not a kind this version knows.
    public let kind: FrameKind?
    public let rawKind: UInt32
    /// The UTF-8 bytes of the method name (requests).
    public let method: UnsafeBufferPointer<UInt8>
    public let timeoutMilliseconds: UInt32
    public let payload: UnsafeRawBufferPointer
    public private(set) var statusCode = StatusCode.ok
    public private(set) var statusMessage: UnsafePointer<CChar>?
    public let window: UInt32
    /// The UTF-8 bytes of the caller's `traceparent` (requests); empty when it sent none.
    public let traceparent: UnsafeBufferPointer<UInt8>

    init(_ c: UnsafePointer<Subscriptions__Rpc__V1__Envelope>) {
        let e = c.pointee
        let method = e.method.map { UnsafeRawBufferPointer(start: $0, count: strlen($0)) }
        let traceparent = e.traceparent.map { UnsafeRawBufferPointer(start: $0, count: strlen($0)) }
        self.init(
            callID: e.call_id, rawKind: e.kind.rawValue, method: method ?? UnsafeRawBufferPointer(start: nil, count: 0),
            timeoutMilliseconds: e.timeout_ms,
            payload: UnsafeRawBufferPointer(start: e.payload.data, count: e.payload.len),
            window: e.window, traceparent: traceparent ?? UnsafeRawBufferPointer(start: nil, count: 0))
        if let status = e.status {
            statusCode = StatusCode(rawValue: Int32(bitPattern: status.pointee.code.rawValue))
            statusMessage = UnsafePointer(status.pointee.message)
        }
    }

    init(
        callID: UInt64, rawKind: UInt32, method: UnsafeRawBufferPointer, timeoutMilliseconds: UInt32,
        payload: UnsafeRawBufferPointer, window: UInt32, traceparent: UnsafeRawBufferPointer
    ) {
        self.callID = callID
        self.rawKind = rawKind
        kind = FrameKind(rawValue: Int32(bitPattern: rawKind))
        self.method = method.assumingMemoryBound(to: UInt8.self)
        self.timeoutMilliseconds = timeoutMilliseconds
        self.payload = payload
        self.window = window
        self.traceparent = traceparent.assumingMemoryBound(to: UInt8.self)
    }

    /// The method name as a String (allocates).
    public var methodName: String { String(decoding: method, as: UTF8.self) }

    /// The status message as a String (allocates); empty when absent.
    public var statusText: String { statusMessage.map { String(cString: $0) } ?? "" }
}

/// Encodes and decodes the envelope with protobuf-c.
public enum Envelope {
    /// The frame body is not a valid envelope.
    public struct DecodeFailure: Error, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { "frame is not a valid subscriptions.rpc.v1.Envelope: \(reason)" }
    }

    /// Unpacks `frame` and calls `body` with a view of it, then frees the unpacked message.
    public static func withDecoded<T>(
        _ frame: UnsafeRawBufferPointer, _ body: (borrowing EnvelopeView) throws -> T
    ) throws -> T {
        try UnpackArena.withAllocator { allocator in
            guard
                let message = subscriptions__rpc__v1__envelope__unpack(
                    allocator, frame.count, frame.baseAddress?.assumingMemoryBound(to: UInt8.self))
            else {
                throw DecodeFailure(
                    reason: ProtoWireReader.firstProblem(in: frame) ?? "protobuf-c could not unpack it")
            }
            // The unpacked message owns copies of every field; freed after `body` returns.
            defer { subscriptions__rpc__v1__envelope__free_unpacked(message, allocator) }
            return try body(EnvelopeView(message))
        }
    }

    /// Reads the envelope of a frame a client sent by hand, in place: nothing is allocated and
    /// no status is read (a request carries none). The fields must have their schema's wire
    /// types; at most `maxUnknownFields` fields the schema does not know are skipped, more are
    /// refused. Where protobuf-c would keep the last of a repeated field, so does this.
    public static func scanned(_ frame: UnsafeRawBufferPointer, maxUnknownFields: Int = 16) throws(DecodeFailure)
        -> EnvelopeView
    {
        var callID: UInt64 = 0
        var rawKind: UInt32 = 0
        var timeout: UInt32 = 0
        var window: UInt32 = 0
        var method = UnsafeRawBufferPointer(start: nil, count: 0)
        var payload = method
        var traceparent = method
        var unknown = 0
        var reader = ProtoWireReader(frame)
        while let (number, value) = reader.next() {
            switch (number, value) {
            case (1, .varint(let varint)): callID = varint
            case (2, .varint(let varint)): rawKind = UInt32(truncatingIfNeeded: varint)
            case (4, .varint(let varint)): timeout = UInt32(truncatingIfNeeded: varint)
            case (7, .varint(let varint)): window = UInt32(truncatingIfNeeded: varint)
            case (3, .bytes(let contents)): method = contents
            case (5, .bytes(let contents)): payload = contents
            case (8, .bytes(let contents)): traceparent = contents
            case (6, .bytes): break
            case (1, _), (2, _), (4, _), (7, _): throw DecodeFailure(reason: "field \(number) is not a varint")
            case (3...6, _), (8, _): throw DecodeFailure(reason: "field \(number) is not length-delimited")
            default:
                unknown += 1
                guard unknown <= maxUnknownFields else {
                    throw DecodeFailure(reason: "more than \(maxUnknownFields) fields this version does not know")
                }
            }
        }
        if let problem = reader.problem { throw DecodeFailure(reason: problem) }
        return EnvelopeView(
            callID: callID, rawKind: rawKind, method: method, timeoutMilliseconds: timeout, payload: payload,
            window: window, traceparent: traceparent)
    }

    /// The method name of an envelope whose first bytes are `prefix`, when it lies whole among
    /// them (a client writes the fields in number order, so it comes within the first few dozen).
    public static func leadingMethod(in prefix: UnsafeRawBufferPointer) -> UnsafeBufferPointer<UInt8>? {
        var reader = ProtoWireReader(prefix)
        while let (number, value) = reader.next() {
            if number == 3, let method = value.contents { return method.assumingMemoryBound(to: UInt8.self) }
        }
        return nil
    }

    /// Appends one whole frame (length prefix and envelope) to `output`.
    /// `method` and `traceparent` must be NUL-terminated UTF-8 when given. A status is written
    /// only when not OK.
    public static func appendFrame(
        to output: inout [UInt8], callID: UInt64, kind: FrameKind, method: UnsafePointer<CChar>? = nil,
        traceparent: UnsafePointer<CChar>? = nil,
        timeoutMilliseconds: UInt32 = 0, payload: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
        status: StatusCode = .ok, statusMessage: String = "", window: UInt32 = 0
    ) {
        var envelope = Subscriptions__Rpc__V1__Envelope()
        subscriptions__rpc__v1__envelope__init(&envelope)
        envelope.call_id = callID
        envelope.kind = Subscriptions__Rpc__V1__FrameKind(rawValue: UInt32(bitPattern: kind.rawValue))
        envelope.timeout_ms = timeoutMilliseconds
        envelope.window = window
        envelope.payload.len = payload.count
        envelope.payload.data = UnsafeMutablePointer(mutating: payload.baseAddress?.assumingMemoryBound(to: UInt8.self))
        if let method { envelope.method = UnsafeMutablePointer(mutating: method) }
        if let traceparent { envelope.traceparent = UnsafeMutablePointer(mutating: traceparent) }
        if status == .ok {
            ProtobufC.pack(&envelope, onto: &output, framed: true)
        } else {
            statusMessage.withCString { text in
                var cStatus = Subscriptions__Rpc__V1__Status()
                subscriptions__rpc__v1__status__init(&cStatus)
                cStatus.code = Subscriptions__Rpc__V1__StatusCode(rawValue: UInt32(bitPattern: status.rawValue))
                cStatus.message = UnsafeMutablePointer(mutating: text)
                withUnsafeMutablePointer(to: &cStatus) { statusPointer in
                    envelope.status = statusPointer
                    ProtobufC.pack(&envelope, onto: &output, framed: true)
                }
            }
        }
    }
}
