import CShims
import Foundation
import Glibc
import Observability
import Wire

/// What a `FramedChannel` tells its owner. Called on the channel's loop thread.
protocol FramedChannelDelegate: AnyObject {
    /// The connection is established (and TLS is done): frames may flow.
    func channelDidBecomeReady(_ channel: FramedChannel)
    /// Bytes just read that start at a frame boundary, before their frames are handed over one
    /// by one: a look ahead at what is coming (a complete frame among them is then `received`;
    /// the last one may be incomplete). Valid only during the call.
    func channel(_ channel: FramedChannel, willDecode bytes: UnsafeRawBufferPointer)
    /// One whole frame arrived; the bytes are valid only during the call.
    func channel(_ channel: FramedChannel, received frame: UnsafeRawBufferPointer)
    /// Every frame of the bytes just read has been received.
    func channelDidDecode(_ channel: FramedChannel)
    /// The channel closed; `reason` says why. Nothing more will be called.
    func channel(_ channel: FramedChannel, closedBecause reason: String)
    /// A frame longer than the channel's `admitAbove`, by its length and first bytes: a reason
    /// refuses it before the rest is read (the connection is then closed).
    func channel(_ channel: FramedChannel, admit length: Int, prefix: UnsafeRawBufferPointer) -> String?
    /// The byte stream could not be framed (`too_long`, `empty` or `refused`); the channel is closing.
    func channel(_ channel: FramedChannel, rejectedFrame reason: String)
    /// Output fell below the low watermark after `notifyWhenDrained` was set.
    func channelDidDrain(_ channel: FramedChannel)
}

extension FramedChannelDelegate {
    func channelDidDecode(_ channel: FramedChannel) {}
    func channel(_ channel: FramedChannel, admit length: Int, prefix: UnsafeRawBufferPointer) -> String? { nil }
    func channel(_ channel: FramedChannel, willDecode bytes: UnsafeRawBufferPointer) {}
    func channel(_ channel: FramedChannel, rejectedFrame reason: String) {}
    func channelDidDrain(_ channel: FramedChannel) {}
}

/// A non-blocking TCP connection, plain or TLS, that reads length-prefixed frames and writes
/// buffered ones. All reads of one wakeup are decoded before anything is written, and all
/// replies written in that iteration leave in one `write` per connection.
///
/// Memory is bounded: the decoder holds at most one frame (checked against the maximum before
/// any body byte is stored); when unsent output passes `highWatermark`, the channel stops
/// reading until the peer has taken it below `lowWatermark`.
final class FramedChannel: EventLoopHandler, EventLoopFlushable, @unchecked Sendable {  // confined to its loop thread
    enum State { case connecting, handshaking, open, closed }

    let loop: EventLoop
    let fd: Int32
    private(set) var state: State
    private var token: UInt64 = 0
    private var tls: TLSSession?
    private var decoder: FrameDecoder
    weak var delegate: (any FramedChannelDelegate)?

    /// Frames waiting to be written; append with `Envelope.appendFrame` then `scheduleFlush()`.
    var output: [UInt8] = []
    private var outputOffset = 0
    private var flushScheduled = false
    private var wantsWritable = false
    private var readPaused = false
    private var readNeedsWritable = false
    private var writeNeedsReadable = false
    /// Asked for by a delegate that paused producers: `channelDidDrain` once output is low.
    var notifyWhenDrained = false
    private var closeWhenFlushed: String?
    static let highWatermark = 4 << 20
    static let lowWatermark = 1 << 20

    /// When the last byte arrived (monotonic ns).
    private(set) var lastActivity: UInt64
    /// When the current incomplete frame or handshake began, if one is in progress.
    private(set) var partialSince: UInt64?
    /// Names from the peer's certificate, once TLS is done.
    private(set) var peerIdentities: [String] = []

    /// The owner sets `delegate` before `start()`.
    init(
        loop: EventLoop, fd: Int32, tls: TLSSession?, maxFrameLength: Int, connecting: Bool, admitAbove: Int = .max
    ) {
        self.loop = loop
        self.fd = fd
        self.tls = tls
        self.decoder = FrameDecoder(maxFrameLength: maxFrameLength)
        decoder.admitAbove = admitAbove
        let now = loop.clock.nanoseconds()
        lastActivity = now
        state = connecting ? .connecting : (tls == nil ? .open : .handshaking)
        if state != .open { partialSince = now }
    }

    /// Registers with the loop; call on the loop thread right after init.
    func start() {
        let events = state == .connecting ? EPOLLOUT.rawValue : EPOLLIN.rawValue
        wantsWritable = state == .connecting
        token = loop.register(fd: fd, events: events, handler: self)
        if state == .handshaking { advanceHandshake() }
        if state == .open { delegate?.channelDidBecomeReady(self) }
    }

    var isOpen: Bool { state == .open }
    var pendingOutputBytes: Int { output.count - outputOffset }

    // MARK: Events

    func handle(events: UInt32) {
        switch state {
        case .closed:
            return
        case .connecting:
            let error = Socket.pendingError(fd)
            guard error == 0 else { return close(Socket.errorText(error)) }
            state = tls == nil ? .open : .handshaking
            updateInterest()
            if state == .handshaking {
                advanceHandshake()
            } else {
                partialSince = nil
                delegate?.channelDidBecomeReady(self)
            }
        case .handshaking:
            advanceHandshake()
        case .open:
            let readable = events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
            let writable = events & EPOLLOUT.rawValue != 0
            // TLS may need the other direction: a read that must write first (key update
            // reply) waits for EPOLLOUT, a write that must read first waits for EPOLLIN.
            if !readPaused && (readable || (writable && readNeedsWritable)) { readAvailable() }
            if state == .open && (writable || (readable && writeNeedsReadable)) { flush() }
        }
    }

    private func advanceHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .done:
            state = .open
            partialSince = nil
            peerIdentities = tls.peerIdentities()
            wantsWritable = false
            updateInterest()
            delegate?.channelDidBecomeReady(self)
            if state == .open { readAvailable() }
        case .wantRead:
            setWritableInterest(false)
        case .wantWrite:
            setWritableInterest(true)
        case .closed:
            close("peer closed the connection during the TLS handshake")
        case .failed(let reason):
            close("TLS handshake failed: \(reason)")
        }
    }

    private func readAvailable() {
        let scratch = loop.scratch
        var reads = 0
        readNeedsWritable = false
        while state == .open && !readPaused {
            // A few reads per wakeup keep one busy peer from starving the others; epoll is
            // level-triggered, so what is left is read on the next pass.
            if reads == 4 {
                if tls?.hasBufferedBytes == true {
                    // Bytes OpenSSL already holds raise no epoll event: come back for them.
                    loop.execute { [weak self] in self?.readAvailable() }
                }
                return
            }
            let count: Int
            if let tls {
                switch tls.read(into: scratch) {
                case .done(let n): count = n
                case .wantRead: return
                case .wantWrite:
                    readNeedsWritable = true
                    return setWritableInterest(true)
                case .closed: return close("peer closed the connection")
                case .failed(let reason): return close("TLS error: \(reason)")
                }
                reads += 1
            } else {
                let n = Glibc.read(fd, scratch.baseAddress, scratch.count)
                if n == 0 { return close("peer closed the connection") }
                if n < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK { return }
                    if errno == EINTR { continue }
                    return close(Socket.errorText())
                }
                count = n
                // A short read emptied the socket: asking again would only return EAGAIN.
                reads = n < scratch.count ? 4 : reads + 1
            }
            lastActivity = loop.clock.nanoseconds()
            let bytes = UnsafeRawBufferPointer(rebasing: scratch[0..<count])
            // Loaded once per read rather than once per frame.
            guard let delegate else { return close("the channel's owner is gone") }
            if !decoder.hasPartialFrame { delegate.channel(self, willDecode: bytes) }
            do {
                try decoder.decode(
                    bytes, admit: { length, prefix in delegate.channel(self, admit: length, prefix: prefix) }
                ) { frame in
                    guard state == .open, closeWhenFlushed == nil else { return }
                    delegate.channel(self, received: frame)
                }
            } catch let failure as FrameDecoder.Failure {
                delegate.channelDidDecode(self)  // the frames before the bad one were received
                switch failure {
                case .frameTooLong: delegate.channel(self, rejectedFrame: "too_long")
                case .emptyFrame: delegate.channel(self, rejectedFrame: "empty")
                case .refused:
                    delegate.channel(self, rejectedFrame: "refused")
                    return protocolViolation(failure.description, code: .resourceExhausted)
                }
                return protocolViolation(failure.description)
            } catch {
                delegate.channelDidDecode(self)
                return close("\(error)")
            }
            delegate.channelDidDecode(self)
            if decoder.hasPartialFrame {
                if partialSince == nil { partialSince = lastActivity }
            } else {
                partialSince = nil
            }
            if pendingOutputBytes > Self.highWatermark { pauseReading() }
        }
    }

    /// Sends a connection-level error (call id 0) that says what was wrong, then closes.
    func protocolViolation(_ reason: String, code: StatusCode = .invalidArgument) {
        Envelope.appendFrame(to: &output, callID: 0, kind: .response, status: code, statusMessage: reason)
        closeAfterFlush("protocol violation: \(reason)")
    }

    // MARK: Output

    /// Writes pending output at the end of this loop iteration.
    func scheduleFlush() {
        guard !flushScheduled, state != .closed else { return }
        flushScheduled = true
        loop.markDirty(self)
    }

    func flush() {
        flushScheduled = false
        guard state == .open else { return }
        writeNeedsReadable = false
        while outputOffset < output.count {
            let remaining = output.count - outputOffset
            let written: Int = output.withUnsafeBytes { raw in
                let slice = UnsafeRawBufferPointer(rebasing: raw[outputOffset...])
                if let tls {
                    switch tls.write(slice) {
                    case .done(let n): return n
                    case .wantWrite: return 0
                    case .wantRead:
                        writeNeedsReadable = true
                        return 0
                    case .closed: return -2
                    case .failed: return -1
                    }
                }
                let n = send(fd, slice.baseAddress, remaining, Int32(MSG_NOSIGNAL))
                if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1 }
                return n
            }
            if written < 0 {
                return close(written == -2 ? "peer closed the connection" : "write failed: \(Socket.errorText())")
            }
            if written == 0 { break }
            outputOffset += written
        }
        if outputOffset == output.count {
            output.removeAll(keepingCapacity: output.capacity <= 1 << 20)
            outputOffset = 0
            setWritableInterest(readNeedsWritable)
            if let reason = closeWhenFlushed { return close(reason) }
        } else {
            if outputOffset > 1 << 20 {
                output.removeFirst(outputOffset)
                outputOffset = 0
            }
            setWritableInterest(!writeNeedsReadable)
        }
        if pendingOutputBytes < Self.lowWatermark {
            if readPaused && closeWhenFlushed == nil { resumeReading() }
            if notifyWhenDrained {
                notifyWhenDrained = false
                delegate?.channelDidDrain(self)
            }
        }
    }

    private func pauseReading() {
        readPaused = true
        updateInterest()
    }

    private func resumeReading() {
        readPaused = false
        updateInterest()
        readAvailable()  // TLS may hold decrypted bytes epoll cannot see
    }

    private func setWritableInterest(_ on: Bool) {
        guard wantsWritable != on else { return }
        wantsWritable = on
        updateInterest()
    }

    private func updateInterest() {
        guard state != .closed else { return }
        var events: UInt32 = 0
        if !readPaused || state != .open { events |= EPOLLIN.rawValue }
        if wantsWritable || state == .connecting { events |= EPOLLOUT.rawValue }
        loop.modify(fd: fd, token: token, events: events)
    }

    // MARK: Closing

    /// Flushes what is queued, then closes.
    func closeAfterFlush(_ reason: String) {
        guard state != .closed else { return }
        if state != .open || pendingOutputBytes == 0 { return close(reason) }
        closeWhenFlushed = reason
        readPaused = true
        updateInterest()
        scheduleFlush()
    }

    /// Closes now; queued output is dropped.
    func close(_ reason: String) {
        guard state != .closed else { return }
        if state == .open { tls?.shutdown() }
        state = .closed
        loop.deregister(fd: fd, token: token)
        Glibc.close(fd)
        output = []
        tls = nil
        let delegate = self.delegate
        self.delegate = nil
        delegate?.channel(self, closedBecause: reason)
    }
}
