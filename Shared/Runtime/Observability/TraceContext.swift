/// One call's place in a trace, as W3C Trace Context's `traceparent` carries it
/// (https://www.w3.org/TR/trace-context/): version `00`, a 32-hex trace id shared by every call
/// that serves one purchase or notification, a 16-hex parent id naming the call that sent it,
/// and 2-hex flags.
///
/// The context of the call being served is the task-local `current`: the RPC and HTTP servers
/// bind it for each call (the caller's when it sent a valid one, else a new trace), the logger
/// stamps its trace id on each line, and clients send `outgoing()` with each call they make.
/// Held as integers: parsing a header allocates nothing. New ids come from `TraceIDs`, not
/// from a system call each.
public struct TraceContext: Sendable, Hashable, CustomStringConvertible {
    private let traceHigh: UInt64
    private let traceLow: UInt64
    private let parent: UInt64
    /// The trace flags (bit 0: sampled).
    public let flags: UInt8

    /// The name of the HTTP header (and of the RPC envelope field) that carries it.
    public static let headerName = "traceparent"

    /// The context of the call the current task (or thread) serves; nil outside one.
    @TaskLocal public static var current: TraceContext?

    private init(traceHigh: UInt64, traceLow: UInt64, parent: UInt64, flags: UInt8) {
        self.traceHigh = traceHigh
        self.traceLow = traceLow
        self.parent = parent
        self.flags = flags
    }

    /// Parses a `traceparent` value; nil when it is not one this version accepts: other than
    /// 55 characters of version `00`, upper-case or non-hex digits, or an all-zero id.
    public init?(traceparent: String) {
        var text = traceparent
        guard let parsed = text.withUTF8({ TraceContext(traceparent: $0) }) else { return nil }
        self = parsed
    }

    /// Parses the UTF-8 bytes of a `traceparent` value (as `init(traceparent:)`).
    public init?(traceparent bytes: UnsafeBufferPointer<UInt8>) {
        // "00-" 32 hex "-" 16 hex "-" 2 hex
        guard bytes.count == 55, bytes[0] == UInt8(ascii: "0"), bytes[1] == UInt8(ascii: "0"),
            bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            let high = Self.hex(bytes[3..<19]), let low = Self.hex(bytes[19..<35]), high | low != 0,
            let parent = Self.hex(bytes[36..<52]), parent != 0, let flags = Self.hex(bytes[53..<55])
        else { return nil }
        self.init(traceHigh: high, traceLow: low, parent: parent, flags: UInt8(flags))
    }

    /// A context on trace `traceID` (as `isTraceID` accepts) with a new parent id, flagged
    /// sampled: for a call made later for what that trace recorded (a webhook delivery of its
    /// event). Nil when `traceID` is not a trace id.
    public init?(traceID: String) {
        var text = traceID
        guard let ids = text.withUTF8({ Self.traceIDParts($0) }) else { return nil }
        self.init(traceHigh: ids.high, traceLow: ids.low, parent: max(TraceIDs.next(), 1), flags: 1)
    }

    /// A new trace: random ids, flagged sampled.
    public static func start() -> TraceContext {
        let high = TraceIDs.next()
        let low = TraceIDs.next()
        return TraceContext(
            traceHigh: high, traceLow: high | low == 0 ? 1 : low, parent: max(TraceIDs.next(), 1), flags: 1)
    }

    /// The context the incoming `traceparent` names when valid, else a new trace: an invalid
    /// header is ignored, never an error.
    public static func continuing(_ traceparent: String?) -> TraceContext {
        traceparent.flatMap { TraceContext(traceparent: $0) } ?? start()
    }

    /// The context for a call made while serving this one: the same trace id and flags, a new
    /// parent id.
    public func child() -> TraceContext {
        TraceContext(traceHigh: traceHigh, traceLow: traceLow, parent: max(TraceIDs.next(), 1), flags: flags)
    }

    /// The context an outgoing call carries: a child of `current`, or a new trace outside a call.
    public static func outgoing() -> TraceContext { current?.child() ?? start() }

    /// 32 lowercase hex digits, not all zero.
    public var traceID: String { Self.hex(traceHigh, digits: 16) + Self.hex(traceLow, digits: 16) }
    /// 16 lowercase hex digits, not all zero.
    public var parentID: String { Self.hex(parent, digits: 16) }

    /// The header value: `00-<trace id>-<parent id>-<flags>`.
    public var traceparent: String {
        let text = traceparentCString
        return String(decoding: text.dropLast().lazy.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `traceparent` as NUL-terminated UTF-8, built in one allocation (an RPC request's envelope
    /// field).
    public var traceparentCString: [CChar] {
        var text = [CChar](repeating: 0, count: 56)
        let digits: StaticString = "0123456789abcdef"
        func put(_ value: UInt64, digits count: Int, at offset: Int) {
            for index in 0..<count {
                let nibble = Int(value >> UInt64(4 * (count - 1 - index)) & 0xF)
                text[offset + index] = CChar(bitPattern: digits.utf8Start[nibble])
            }
        }
        text[0] = 0x30
        text[1] = 0x30
        text[2] = 0x2D
        put(traceHigh, digits: 16, at: 3)
        put(traceLow, digits: 16, at: 19)
        text[35] = 0x2D
        put(parent, digits: 16, at: 36)
        text[52] = 0x2D
        put(UInt64(flags), digits: 2, at: 53)
        return text
    }

    public var description: String { traceparent }

    /// Whether `text` is a trace id: 32 lowercase hex digits, not all zero.
    public static func isTraceID(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { traceIDParts($0) } != nil
    }

    private static func traceIDParts(_ bytes: UnsafeBufferPointer<UInt8>) -> (high: UInt64, low: UInt64)? {
        guard bytes.count == 32, let high = hex(bytes[0..<16]), let low = hex(bytes[16..<32]), high | low != 0
        else { return nil }
        return (high, low)
    }

    /// The value of at most 16 lowercase hex digits; nil for any other byte.
    private static func hex(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> UInt64? {
        var value: UInt64 = 0
        for byte in digits {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
