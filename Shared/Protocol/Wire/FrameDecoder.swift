/// Splits a byte stream into frames: a 4-byte big-endian length, then that many bytes.
///
/// A pure value: feed it whatever the socket gave, in any split, and it hands out each whole
/// frame once. A declared length above `maxFrameLength` or equal to zero is an error the moment
/// its 4 header bytes are seen, before any buffer for the body is reserved; only bytes that
/// actually arrived are ever held.
public struct FrameDecoder: Sendable {
    /// Why a stream cannot be framed.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case frameTooLong(length: UInt32, maximum: Int)
        case emptyFrame
        /// The owner's `admit` refused a frame above `admitAbove` by its first bytes.
        case refused(String)

        public var description: String {
            switch self {
            case .frameTooLong(let length, let maximum):
                "frame length \(length) exceeds the maximum of \(maximum) bytes"
            case .emptyFrame: "frame length 0: a frame carries one envelope and cannot be empty"
            case .refused(let reason): reason
            }
        }
    }

    public let maxFrameLength: Int
    /// Frames longer than this are shown to `decode`'s `admit` once their first
    /// `admitPrefix` bytes (or all, when shorter) have arrived, before the rest is stored.
    public var admitAbove = Int.max
    public static let admitPrefix = 256
    /// Bytes of an incomplete frame carried over from earlier input.
    private var pending: [UInt8] = []
    /// Whether the frame in `pending` has been admitted (or needs no admission).
    private var pendingAdmitted = false

    public init(maxFrameLength: Int) {
        precondition(maxFrameLength > 0)
        self.maxFrameLength = maxFrameLength
    }

    /// True while part of a frame has arrived and the rest has not.
    public var hasPartialFrame: Bool { !pending.isEmpty }

    /// Feeds `input` and calls `onFrame` with the body of every frame it completes, in order.
    /// The body pointer is valid only during the call. Complete frames inside `input` are handed
    /// out without copying. A frame longer than `admitAbove` is first shown to `admit` (its
    /// length and its first bytes): a reason it returns refuses it. Stops at the first error;
    /// the decoder is then unusable.
    public mutating func decode(
        _ input: UnsafeRawBufferPointer,
        admit: (_ length: Int, _ prefix: UnsafeRawBufferPointer) -> String? = { _, _ in nil },
        onFrame: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var offset = 0
        if !pending.isEmpty {
            // Complete the header, then the body, from the new input.
            if pending.count < 4 {
                let take = min(4 - pending.count, input.count)
                pending.append(contentsOf: input[0..<take])
                offset = take
                guard pending.count == 4 else { return }
            }
            let length = Int(
                try Self.checkedLength(pending[0], pending[1], pending[2], pending[3], maxFrameLength: maxFrameLength))
            if !pendingAdmitted {
                // Only the bytes the admission needs, until it has been given.
                let needed = 4 + min(length, Self.admitPrefix) - pending.count
                let take = min(max(0, needed), input.count - offset)
                pending.append(contentsOf: input[offset..<(offset + take)])
                offset += take
                try admitPending(admit)
                guard pendingAdmitted else { return }
            }
            let missing = 4 + length - pending.count
            let take = min(missing, input.count - offset)
            pending.append(contentsOf: input[offset..<(offset + take)])
            offset += take
            guard pending.count == 4 + length else { return }
            try pending.withUnsafeBytes { bytes in try onFrame(UnsafeRawBufferPointer(rebasing: bytes[4...])) }
            pending.removeAll(keepingCapacity: pending.capacity <= 64 * 1024)
            pendingAdmitted = false
        }
        while let body = try Self.frameBody(in: input, at: offset, maxFrameLength: maxFrameLength) {
            let frame = UnsafeRawBufferPointer(rebasing: input[body])
            if frame.count > admitAbove,
                let reason = admit(frame.count, UnsafeRawBufferPointer(rebasing: frame.prefix(Self.admitPrefix)))
            {
                throw Failure.refused(reason)
            }
            try onFrame(frame)
            offset = body.upperBound
        }
        if offset < input.count {
            if input.count - offset >= 4 {
                // The header is already checked; reserve no more than what arrived.
                pending.reserveCapacity(input.count - offset)
            }
            pending.append(contentsOf: input[offset...])
            try admitPending(admit)
        }
    }

    /// Admits the frame in `pending` once its header and enough of its body are in.
    private mutating func admitPending(_ admit: (Int, UnsafeRawBufferPointer) -> String?) throws(Failure) {
        guard !pendingAdmitted, pending.count >= 4 else { return }
        let length = Int(
            try Self.checkedLength(pending[0], pending[1], pending[2], pending[3], maxFrameLength: maxFrameLength))
        guard length > admitAbove else {
            pendingAdmitted = true
            return
        }
        let prefixLength = min(length, Self.admitPrefix)
        guard pending.count >= 4 + prefixLength else { return }
        let refusal = pending.withUnsafeBytes { bytes in
            admit(length, UnsafeRawBufferPointer(rebasing: bytes[4..<(4 + prefixLength)]))
        }
        if let refusal { throw .refused(refusal) }
        pendingAdmitted = true
    }

    private static func checkedLength(
        _ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, maxFrameLength: Int
    ) throws(Failure) -> UInt32 {
        let length = UInt32(b0) << 24 | UInt32(b1) << 16 | UInt32(b2) << 8 | UInt32(b3)
        if length == 0 { throw .emptyFrame }
        if Int(length) > maxFrameLength { throw .frameTooLong(length: length, maximum: maxFrameLength) }
        return length
    }

    /// Where the body of the frame that starts at `offset` of `input` lies, when the whole
    /// frame is there; nil when it is not (yet). Throws for a length of 0 or above the maximum.
    /// For reading frames in place: `decode` uses it, and so can a look ahead at bytes read.
    public static func frameBody(
        in input: UnsafeRawBufferPointer, at offset: Int, maxFrameLength: Int
    ) throws(Failure) -> Range<Int>? {
        guard input.count - offset >= 4 else { return nil }
        let length = Int(
            try checkedLength(
                input[offset], input[offset + 1], input[offset + 2], input[offset + 3], maxFrameLength: maxFrameLength))
        guard input.count - offset - 4 >= length else { return nil }
        return (offset + 4)..<(offset + 4 + length)
    }
}
