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
    public let statusCode: StatusCode
    public let statusMessage: UnsafePointer<CChar>?
    public let window: UInt32

    init(_ c: UnsafePointer<Subscriptions__Rpc__V1__Envelope>) {
        let e = c.pointee
        callID = e.call_id
        rawKind = e.kind.rawValue
        kind = FrameKind(rawValue: e.kind.rawValue)
        if let m = e.method {
            method = UnsafeBufferPointer(
                start: UnsafeRawPointer(m).assumingMemoryBound(to: UInt8.self), count: strlen(m))
        } else {
            method = UnsafeBufferPointer(start: nil, count: 0)
        }
        timeoutMilliseconds = e.timeout_ms
        payload = UnsafeRawBufferPointer(start: e.payload.data, count: e.payload.len)
        if let status = e.status {
            statusCode = StatusCode(rawValue: Int(status.pointee.code.rawValue))
            statusMessage = UnsafePointer(status.pointee.message)
        } else {
            statusCode = .ok
            statusMessage = nil
        }
        window = e.window
    }

    init(
        callID: UInt64, rawKind: UInt32, method: UnsafeBufferPointer<UInt8>, timeoutMilliseconds: UInt32,
        payload: UnsafeRawBufferPointer, window: UInt32
    ) {
        self.callID = callID
        self.rawKind = rawKind
        kind = FrameKind(rawValue: rawKind)
        self.method = method
        self.timeoutMilliseconds = timeoutMilliseconds
        self.payload = payload
        statusCode = .ok
        statusMessage = nil
        self.window = window
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
                    reason: ProtoWireScanner.firstProblem(in: frame) ?? "protobuf-c could not unpack it")
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
        var method: Range<Int> = 0..<0
        var timeout: UInt32 = 0
        var payload: Range<Int> = 0..<0
        var window: UInt32 = 0
        var unknown = 0
        let wellFormed = try ProtoWireScanner.forEachField(in: frame) {
            (number, varint, contents) throws(DecodeFailure) in
            switch number {
            case 1, 2, 4, 7:
                guard let varint else { throw DecodeFailure(reason: "field \(number) is not a varint") }
                switch number {
                case 1: callID = varint
                case 2: rawKind = UInt32(truncatingIfNeeded: varint)
                case 4: timeout = UInt32(truncatingIfNeeded: varint)
                default: window = UInt32(truncatingIfNeeded: varint)
                }
            case 3, 5, 6:
                guard let contents else { throw DecodeFailure(reason: "field \(number) is not length-delimited") }
                if number == 3 { method = contents }
                if number == 5 { payload = contents }
            default:
                unknown += 1
                guard unknown <= maxUnknownFields else {
                    throw DecodeFailure(reason: "more than \(maxUnknownFields) fields this version does not know")
                }
            }
        }
        guard wellFormed else {
            throw DecodeFailure(reason: ProtoWireScanner.firstProblem(in: frame) ?? "it is not protobuf")
        }
        let bytes = frame.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }
        return EnvelopeView(
            callID: callID, rawKind: rawKind,
            method: UnsafeBufferPointer(start: bytes.map { $0 + method.lowerBound }, count: method.count),
            timeoutMilliseconds: timeout,
            payload: UnsafeRawBufferPointer(
                start: frame.baseAddress.map { $0 + payload.lowerBound }, count: payload.count),
            window: window)
    }

    /// The method name of an envelope whose first bytes are `prefix`, when it lies whole among
    /// them (a client writes the fields in number order, so it comes within the first few dozen).
    public static func leadingMethod(in prefix: UnsafeRawBufferPointer) -> UnsafeBufferPointer<UInt8>? {
        var offset = 0
        while offset < prefix.count {
            guard let key = ProtoWireScanner.readVarint(prefix, &offset) else { return nil }
            switch key & 7 {
            case 0:
                guard ProtoWireScanner.readVarint(prefix, &offset) != nil else { return nil }
            case 2:
                guard let length = ProtoWireScanner.readVarint(prefix, &offset),
                    length <= UInt64(prefix.count - offset)
                else { return nil }
                if key >> 3 == 3 {
                    let start = prefix.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset
                    return UnsafeBufferPointer(start: start, count: Int(length))
                }
                offset += Int(length)
            default:
                return nil
            }
        }
        return nil
    }

    /// Appends one whole frame (length prefix and envelope) to `output`.
    /// `method` must be NUL-terminated UTF-8 when given. A status is written only when not OK.
    public static func appendFrame(
        to output: inout [UInt8], callID: UInt64, kind: FrameKind, method: UnsafePointer<CChar>? = nil,
        timeoutMilliseconds: UInt32 = 0, payload: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
        status: StatusCode = .ok, statusMessage: String = "", window: UInt32 = 0
    ) {
        var envelope = Subscriptions__Rpc__V1__Envelope()
        subscriptions__rpc__v1__envelope__init(&envelope)
        envelope.call_id = callID
        envelope.kind = Subscriptions__Rpc__V1__FrameKind(rawValue: kind.rawValue)
        envelope.timeout_ms = timeoutMilliseconds
        envelope.window = window
        envelope.payload.len = payload.count
        envelope.payload.data = UnsafeMutablePointer(mutating: payload.baseAddress?.assumingMemoryBound(to: UInt8.self))
        if let method { envelope.method = UnsafeMutablePointer(mutating: method) }
        if status == .ok {
            pack(&envelope, into: &output)
        } else {
            statusMessage.withCString { text in
                var cStatus = Subscriptions__Rpc__V1__Status()
                subscriptions__rpc__v1__status__init(&cStatus)
                cStatus.code = Subscriptions__Rpc__V1__StatusCode(rawValue: UInt32(truncatingIfNeeded: status.rawValue))
                cStatus.message = UnsafeMutablePointer(mutating: text)
                withUnsafeMutablePointer(to: &cStatus) { statusPointer in
                    envelope.status = statusPointer
                    pack(&envelope, into: &output)
                }
            }
        }
    }

    private static func pack(_ envelope: inout Subscriptions__Rpc__V1__Envelope, into output: inout [UInt8]) {
        withUnsafePointer(to: &envelope) { pointer in
            let size = subscriptions__rpc__v1__envelope__get_packed_size(pointer)
            let start = output.count
            output.appendZeros(4 + size)
            output.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress! + start
                base[0] = UInt8(truncatingIfNeeded: size >> 24)
                base[1] = UInt8(truncatingIfNeeded: size >> 16)
                base[2] = UInt8(truncatingIfNeeded: size >> 8)
                base[3] = UInt8(truncatingIfNeeded: size)
                // Packs into the bytes just reserved; protobuf-c writes exactly `size` bytes.
                _ = subscriptions__rpc__v1__envelope__pack(pointer, base + 4)
            }
        }
    }
}
