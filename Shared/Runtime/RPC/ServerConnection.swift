import CShims
import Foundation
import Glibc
import Observability
import Synchronization
import Wire

/// One accepted connection: turns request frames into handler calls and replies into frames.
/// Lives on one event loop; every method runs on that loop's thread.
final class ServerConnection: FramedChannelDelegate, @unchecked Sendable {  // confined to its loop thread
    private struct ActiveCall {
        let serial: UInt64
        let methodIndex: Int
        let started: UInt64
        let timer: TimerQueue.ID?
        var task: Task<Void, Never>?
        let stream: ServerStreamWriter?
    }

    private let core: ServerCore
    let loop: EventLoop
    let channel: FramedChannel
    let peer: String
    /// The client's IP address, for the per-address limit.
    let address: String
    /// When the connection was accepted (monotonic ns).
    let openedAt: UInt64
    /// When the last frame arrived (monotonic ns), 0 before the first: read by the acceptor
    /// on another thread when it picks a connection to close.
    private let lastFrame = Atomic<UInt64>(0)
    private let handlersInFlight = Atomic<Int>(0)
    private var calls: [UInt64: ActiveCall] = [:]
    private var nextSerial: UInt64 = 0
    private var draining = false
    /// The peer's identity with the read-only role (`RPC_READ_ONLY`), if it has one.
    private var readOnlyIdentity: String?
    /// Handler tasks still running, including those whose call was cancelled or timed out:
    /// the per-connection cap counts work, not just unanswered calls.
    private var runningHandlers = 0
    /// Streams held back until the connection's output drains.
    private var blockedStreams: [ServerStreamWriter] = []
    /// Where inline handlers write their response payloads, reused from call to call.
    private var scratch: [UInt8] = []
    /// Inline calls of this read answered OK, by method: recorded together once the read's
    /// frames are handled (one clock reading and one lock for all of them).
    private var inlineAnswered: [UInt64]
    private var inlineAnsweredAny = false
    /// Payloads of one method gathered for its prefetch, reused from read to read.
    private var prefetchBatch: [UnsafeRawBufferPointer] = []
    /// The envelopes the look-ahead read in this read's bytes, in order, with their method's
    /// index: `channel(_:received:)` takes each for its frame (same bytes, same place) instead
    /// of reading it again. Emptied when the read's frames are handled.
    private var scannedAhead: [ScannedFrame] = []
    private var scannedAheadNext = 0

    private struct ScannedFrame {
        let frame: UnsafeRawBufferPointer
        let view: EnvelopeView
        let methodIndex: Int?
    }

    init(core: ServerCore, loop: EventLoop, fd: Int32, tls: TLSSession?, peer: String, address: String) {
        self.core = core
        self.loop = loop
        self.peer = peer
        self.address = address
        openedAt = loop.clock.nanoseconds()
        channel = FramedChannel(
            loop: loop, fd: fd, tls: tls, maxFrameLength: core.configuration.maxFrameLength, connecting: false,
            admitAbove: core.smallestRequestLimit)
        inlineAnswered = [UInt64](repeating: 0, count: core.metrics.methodNames.count)
        channel.delegate = self
    }

    var lastFrameAt: UInt64 { lastFrame.load(ordering: .relaxed) }
    var callsInFlight: Int { handlersInFlight.load(ordering: .relaxed) }

    // MARK: FramedChannelDelegate

    func channelDidBecomeReady(_ channel: FramedChannel) {
        // The peer's names are known from here on, and so is its role, once for all its calls.
        readOnlyIdentity = core.readOnlyIdentity(of: channel.peerIdentities)
    }

    func channelDidDrain(_ channel: FramedChannel) {
        let writers = blockedStreams
        blockedStreams.removeAll()
        for writer in writers { writer.setBlocked(false) }
    }

    func channel(_ channel: FramedChannel, willDecode bytes: UnsafeRawBufferPointer) {
        scannedAhead.removeAll(keepingCapacity: true)
        scannedAheadNext = 0
        guard core.router.prefetches else { return }
        // Each envelope is read here as it will be when its frame is received (which then takes
        // this reading); a frame this pass cannot read ends it, and is refused when received.
        var offset = 0
        var batchPrefetch: RPCPrefetch?
        var batchMethod = -1
        let maximum = core.configuration.maxFrameLength
        while let body = try? FrameDecoder.frameBody(in: bytes, at: offset, maxFrameLength: maximum) {
            offset = body.upperBound
            let frame = UnsafeRawBufferPointer(rebasing: bytes[body])
            guard let view = try? Envelope.scanned(frame) else { break }
            let index = view.kind == .request ? core.router.index(of: view.method) : nil
            scannedAhead.append(ScannedFrame(frame: frame, view: view, methodIndex: index))
            guard let index else { continue }
            if index != batchMethod || prefetchBatch.count == 64 {
                runPrefetch(batchPrefetch)
                batchPrefetch = mayPrefetch(index) ? core.router.entries[index].prefetch : nil
                batchMethod = index
            }
            guard batchPrefetch != nil else { continue }
            prefetchBatch.append(view.payload)
        }
        runPrefetch(batchPrefetch)
    }

    /// Whether calls of method `index` would run here: no work is done ahead for a caller the
    /// access policy refuses, nor on a connection that is draining.
    private func mayPrefetch(_ index: Int) -> Bool {
        if case .success = core.admit(
            index, name: "", asker: .peer(channel.peerIdentities, readOnly: readOnlyIdentity), bytes: 0,
            draining: draining)
        {
            return true
        }
        return false
    }

    /// Hands the gathered payloads to their method's prefetch (a lone request gains nothing
    /// from it) and empties the batch.
    private func runPrefetch(_ prefetch: RPCPrefetch?) {
        if let prefetch, prefetchBatch.count > 1 { prefetchBatch.withUnsafeBufferPointer { prefetch($0) } }
        prefetchBatch.removeAll(keepingCapacity: true)
    }

    func channel(_ channel: FramedChannel, received frame: UnsafeRawBufferPointer) {
        lastFrame.store(channel.lastActivity, ordering: .relaxed)
        if scannedAheadNext < scannedAhead.count {
            let ahead = scannedAhead[scannedAheadNext]
            if ahead.frame.baseAddress == frame.baseAddress && ahead.frame.count == frame.count {
                scannedAheadNext += 1
                return handle(ahead.view, frameLength: frame.count, methodIndex: .some(ahead.methodIndex))
            }
        }
        let view: EnvelopeView
        do {
            view = try Envelope.scanned(frame)
        } catch {
            core.metrics.frameRejected(loop: loop.index, reason: "malformed")
            return channel.protocolViolation("\(error)")
        }
        handle(view, frameLength: frame.count)
    }

    /// A frame longer than every method's smallest limit, seen by its first bytes: refused
    /// (before the rest is read) unless it names, up front, a method the caller may call
    /// whose requests may be that long.
    func channel(_ channel: FramedChannel, admit length: Int, prefix: UnsafeRawBufferPointer) -> String? {
        guard let method = Envelope.leadingMethod(in: prefix) else {
            return "a frame of \(length) bytes must name its method within its first \(prefix.count) bytes"
        }
        guard let index = core.router.index(of: method) else {
            return "a frame of \(length) bytes for an unknown method"
        }
        switch core.admit(
            index, name: "", asker: .peer(channel.peerIdentities, readOnly: readOnlyIdentity), bytes: length)
        {
        case .success: return nil
        // A draining server refuses the call once its frame is read, as any other.
        case .failure(let refusal) where refusal.error.code == .unavailable: return nil
        case .failure(let refusal): return refusal.error.message
        }
    }

    /// Records the inline calls of the read just handled, timed to now from the read.
    func channelDidDecode(_ channel: FramedChannel) {
        // The look-ahead's readings point into this read's bytes: no later frame may take them.
        scannedAhead.removeAll(keepingCapacity: true)
        scannedAheadNext = 0
        guard inlineAnsweredAny else { return }
        core.metrics.recordSuccesses(
            loop: loop.index, counts: inlineAnswered, nanoseconds: loop.clock.nanoseconds() - channel.lastActivity)
        for index in inlineAnswered.indices { inlineAnswered[index] = 0 }
        inlineAnsweredAny = false
    }

    func channel(_ channel: FramedChannel, rejectedFrame reason: String) {
        core.metrics.frameRejected(loop: loop.index, reason: reason)
    }

    func channel(_ channel: FramedChannel, closedBecause reason: String) {
        for (_, call) in calls { abandon(call) }
        calls.removeAll()
        blockedStreams.removeAll()
        core.connectionClosed(self, reason: reason)
    }

    // MARK: Frames

    /// `methodIndex`: the router's index of the method, when the look-ahead already found it
    /// (`.some(nil)`: no such method); nil to look it up.
    private func handle(_ view: EnvelopeView, frameLength: Int, methodIndex: Int?? = nil) {
        switch view.kind {
        case .request:
            startCall(view, frameLength: frameLength, methodIndex: methodIndex)
        case .cancel:
            if let call = calls.removeValue(forKey: view.callID) {
                abandon(call)
                record(call, .cancelled)
                drainIfIdle()
            }
        case .windowUpdate:
            calls[view.callID]?.stream?.grant(view.window)
        default:
            channel.protocolViolation("a client may not send frame kind \(view.rawKind)")
        }
    }

    private func startCall(_ view: EnvelopeView, frameLength: Int, methodIndex known: Int??) {
        // The read that brought the frame: one clock reading for every call it carried.
        let started = channel.lastActivity
        let callID = view.callID
        guard callID != 0 else { return channel.protocolViolation("call id 0 is reserved") }
        guard calls.isEmpty || calls[callID] == nil else {
            return channel.protocolViolation("call id \(callID) is already in flight")
        }
        let unknown = core.metrics.unknownMethodIndex
        // The connection's own limit first: a peer past it gets no further.
        guard
            draining || core.isDraining || max(calls.count, runningHandlers) < core.configuration.maxCallsPerConnection
        else {
            return reply(
                callID, unknown, started, .resourceExhausted,
                "too many calls in flight on this connection (at most \(core.configuration.maxCallsPerConnection))")
        }
        let admitted: ServerCore.Admitted
        switch core.admit(
            known ?? core.router.index(of: view.method), name: view.methodName,
            asker: .peer(channel.peerIdentities, readOnly: readOnlyIdentity),
            bytes: frameLength, draining: draining)
        {
        case .success(let admission): admitted = admission
        case .failure(let refusal):
            return reply(callID, refusal.methodIndex ?? unknown, started, refusal.error.code, refusal.error.message)
        }
        let methodIndex = admitted.index
        let hasTimeout = view.timeoutMilliseconds != 0
        let limit = core.callTime(timeoutMilliseconds: UInt64(view.timeoutMilliseconds))
        let deadline = started.saturatingAdd(limit)
        let traceparent = view.traceparent
        // Built only for the handlers that take one (an inline call does without: it reads
        // memory, makes no call and logs nothing, so it needs no trace either).
        func makeContext() -> RPCRequestContext {
            RPCRequestContext(
                method: core.router.entries[methodIndex].name, deadline: deadline,
                peerIdentities: channel.peerIdentities, callerReadOnly: admitted.readOnly, peer: peer,
                clock: loop.clock,
                trace: TraceContext(traceparent: traceparent) ?? .start())
        }

        // A call answered later from any thread, through a responder, under its deadline.
        func startDeferred(_ start: (RPCRequestContext, RPCResponder) -> Void) {
            let context = makeContext()
            let serial = track(callID, methodIndex, started: started, deadline: deadline, limit: limit)
            let finish = finisher(callID, serial)
            let core = self.core
            let responder = RPCResponder { result in
                TraceContext.$current.withValue(context.trace) {
                    let mapped = result.mapError { core.rpcError(from: $0, method: context.method) }
                    core.logCall(context, mapped.map { _ in () })
                    finish(mapped)
                }
            }
            TraceContext.$current.withValue(context.trace) { start(context, responder) }
        }

        switch admitted.handler(in: core.router) {
        case .inline(let handler):
            runInline(
                handler, callID: callID, methodIndex: methodIndex, started: started, payload: view.payload,
                traceparent: traceparent
            ) { handOff in startDeferred(handOff.start) }

        case .unary(let handler):
            let context = makeContext()
            let payload = [UInt8](view.payload)
            let serial = track(callID, methodIndex, started: started, deadline: deadline, limit: limit)
            let finish = finisher(callID, serial)
            let core = self.core
            calls[callID]!.task = Task { finish(await core.runUnary(handler, context, payload)) }

        case .deferred(let handler):
            startDeferred { context, responder in handler(context, view.payload, responder) }

        case .serverStream(let handler):
            let context = makeContext()
            let payload = [UInt8](view.payload)
            let serial = nextCallSerial()
            // A stream runs until it ends unless the caller set a timeout.
            let timer =
                hasTimeout
                ? loop.schedule(at: deadline) { [weak self] in self?.expire(callID, serial, limit) } : nil
            let loop = self.loop
            let window = view.window == 0 ? 16 : min(view.window, 4096)
            // The writer holds the connection until the call ends and releases the writer.
            let writer = ServerStreamWriter(initialCredit: window) { [self] message in
                loop.execute { self.sendStreamMessage(callID, serial, message) }
            }
            calls[callID] = ActiveCall(
                serial: serial, methodIndex: methodIndex, started: started, timer: timer, task: nil, stream: writer)
            handlerStarted()
            let core = self.core
            let streamDeadline: UInt64? = hasTimeout ? deadline : nil
            calls[callID]!.task = Task {
                let result: Result<[UInt8], RPCError>
                do {
                    try await RPCRequestContext.$currentDeadline.withValue(streamDeadline) {
                        try await TraceContext.$current.withValue(context.trace) {
                            try await handler(context, payload, writer)
                        }
                    }
                    result = .success([])
                } catch {
                    result = .failure(
                        TraceContext.$current.withValue(context.trace) {
                            core.rpcError(from: error, method: context.method)
                        })
                }
                writer.finish()
                core.logCall(context, result.map { _ in () })
                loop.execute { [weak self] in
                    self?.handlerEnded(callID, serial, result, kind: .streamEnd)
                    core.callFinished()
                }
            }
        }
    }

    /// Runs an inline handler and queues its reply.
    private func runInline(
        _ handler: (UnsafeRawBufferPointer, inout [UInt8]) throws -> Void, callID: UInt64, methodIndex: Int,
        started: UInt64, payload: UnsafeRawBufferPointer, traceparent: UnsafeBufferPointer<UInt8>,
        handOff: (RPCHandOff) -> Void
    ) {
        do {
            scratch.removeAll(keepingCapacity: true)
            try handler(payload, &scratch)
            if let tooLarge = oversized(scratch.count) {
                return reply(callID, methodIndex, started, tooLarge.code, tooLarge.message)
            }
            scratch.withUnsafeBytes { bytes in
                Envelope.appendFrame(to: &channel.output, callID: callID, kind: .response, payload: bytes)
            }
            inlineAnswered[methodIndex] += 1
            inlineAnsweredAny = true
            channel.scheduleFlush()
        } catch let later as RPCHandOff {
            handOff(later)
        } catch {
            let failure = TraceContext.$current.withValue(TraceContext(traceparent: traceparent) ?? .start()) {
                core.rpcError(from: error, method: core.router.entries[methodIndex].name)
            }
            reply(callID, methodIndex, started, failure.code, failure.message)
        }
    }

    /// Registers a unary call whose handler runs elsewhere, with its deadline timer; returns its serial.
    private func track(
        _ callID: UInt64, _ methodIndex: Int, started: UInt64, deadline: UInt64, limit: UInt64
    ) -> UInt64 {
        let serial = nextCallSerial()
        let timer = loop.schedule(at: deadline) { [weak self] in self?.expire(callID, serial, limit) }
        calls[callID] = ActiveCall(
            serial: serial, methodIndex: methodIndex, started: started, timer: timer, task: nil, stream: nil)
        handlerStarted()
        return serial
    }

    /// What a handler calls, from any thread, with its result: the reply is queued on the loop,
    /// and the call stops counting then (or when its connection is already gone).
    private func finisher(_ callID: UInt64, _ serial: UInt64) -> @Sendable (Result<[UInt8], RPCError>) -> Void {
        let loop = self.loop
        let core = self.core
        return { result in
            loop.execute { [weak self] in
                self?.handlerEnded(callID, serial, result, kind: .response)
                core.callFinished()
            }
        }
    }

    private func handlerStarted() {
        runningHandlers += 1
        handlersInFlight.store(runningHandlers, ordering: .relaxed)
        core.callStarted()
    }

    private func handlerEnded(_ callID: UInt64, _ serial: UInt64, _ result: Result<[UInt8], RPCError>, kind: FrameKind)
    {
        runningHandlers -= 1
        handlersInFlight.store(runningHandlers, ordering: .relaxed)
        complete(callID, serial, result, kind: kind)
    }

    /// RESOURCE_EXHAUSTED when a reply would not fit in a frame the peer accepts.
    private func oversized(_ payloadCount: Int) -> RPCError? {
        // A reply's envelope adds at most 24 bytes (call id, kind, payload tag and length).
        let maximum = core.configuration.maxFrameLength
        guard payloadCount + 24 > maximum else { return nil }
        return RPCError(
            .resourceExhausted,
            "the response of \(payloadCount) bytes does not fit in the maximum frame length of \(maximum)")
    }

    private func nextCallSerial() -> UInt64 {
        nextSerial += 1
        return nextSerial
    }

    // MARK: Replies

    private func reply(_ callID: UInt64, _ methodIndex: Int, _ started: UInt64, _ code: StatusCode, _ message: String) {
        Envelope.appendFrame(to: &channel.output, callID: callID, kind: .response, status: code, statusMessage: message)
        core.metrics.record(
            loop: loop.index, method: methodIndex, code: code, nanoseconds: loop.clock.nanoseconds() - started)
        channel.scheduleFlush()
    }

    private func complete(_ callID: UInt64, _ serial: UInt64, _ result: Result<[UInt8], RPCError>, kind: FrameKind) {
        guard let call = calls[callID], call.serial == serial else { return }  // already expired or cancelled
        calls[callID] = nil
        if let timer = call.timer { loop.cancel(timer: timer) }
        var result = result
        if case .success(let payload) = result, let tooLarge = oversized(payload.count) { result = .failure(tooLarge) }
        switch result {
        case .success(let payload):
            payload.withUnsafeBytes { bytes in
                Envelope.appendFrame(to: &channel.output, callID: callID, kind: kind, payload: bytes)
            }
            record(call, .ok)
        case .failure(let error):
            Envelope.appendFrame(
                to: &channel.output, callID: callID, kind: kind, status: error.code, statusMessage: error.message)
            record(call, error.code)
        }
        channel.scheduleFlush()
        drainIfIdle()
    }

    private func expire(_ callID: UInt64, _ serial: UInt64, _ limit: UInt64) {
        guard let call = calls[callID], call.serial == serial else { return }
        calls[callID] = nil
        abandon(call, timerFired: true)
        let kind: FrameKind = call.stream == nil ? .response : .streamEnd
        Envelope.appendFrame(
            to: &channel.output, callID: callID, kind: kind, status: .deadlineExceeded,
            statusMessage: ServerCore.deadlineExceeded(limit))
        record(call, .deadlineExceeded)
        channel.scheduleFlush()
        drainIfIdle()
    }

    private func sendStreamMessage(_ callID: UInt64, _ serial: UInt64, _ payload: [UInt8]) {
        guard let call = calls[callID], call.serial == serial, let writer = call.stream else { return }
        writer.delivered(payload.count)
        if let tooLarge = oversized(payload.count) {
            calls[callID] = nil
            abandon(call)
            Envelope.appendFrame(
                to: &channel.output, callID: callID, kind: .streamEnd, status: tooLarge.code,
                statusMessage: tooLarge.message)
            record(call, tooLarge.code)
            channel.scheduleFlush()
            return
        }
        payload.withUnsafeBytes { bytes in
            Envelope.appendFrame(to: &channel.output, callID: callID, kind: .streamMessage, payload: bytes)
        }
        if channel.pendingOutputBytes > FramedChannel.highWatermark {
            writer.setBlocked(true)
            blockedStreams.append(writer)
            channel.notifyWhenDrained = true
        }
        channel.scheduleFlush()
    }

    /// Stops a call's work; its reply, if any, is the caller's business.
    private func abandon(_ call: ActiveCall, timerFired: Bool = false) {
        if !timerFired, let timer = call.timer { loop.cancel(timer: timer) }
        call.task?.cancel()
        call.stream?.finish()
    }

    private func record(_ call: ActiveCall, _ code: StatusCode) {
        core.metrics.record(
            loop: loop.index, method: call.methodIndex, code: code,
            nanoseconds: loop.clock.nanoseconds() - call.started)
    }

    // MARK: Lifecycle

    /// Refuses new calls and ends open streams with UNAVAILABLE (their readers resume
    /// elsewhere); closes once the unary calls in flight are answered.
    func beginDrain() {
        draining = true
        for (callID, call) in calls where call.stream != nil {
            calls[callID] = nil
            abandon(call)
            Envelope.appendFrame(
                to: &channel.output, callID: callID, kind: .streamEnd, status: .unavailable,
                statusMessage: ServerCore.shuttingDown)
            record(call, .unavailable)
            channel.scheduleFlush()
        }
        drainIfIdle()
    }

    private func drainIfIdle() {
        if draining && calls.isEmpty { channel.closeAfterFlush("the server is shutting down") }
    }

    /// Closes the connection to admit a newer one (at the connection cap), unless a call has
    /// started on it since it was chosen.
    func evict() {
        guard channel.state != .closed else { return }
        guard runningHandlers == 0 else { return core.registry.spared(self) }
        core.metrics.connectionsEvicted.add(1, ordering: .relaxed)
        channel.close("closed to admit a new connection at the connection limit")
    }

    /// Applies the first-frame deadline, the read deadline and the idle timeout.
    func sweep(now: UInt64) {
        guard channel.state != .closed else { return }
        if lastFrameAt == 0 && now - openedAt > core.firstFrameTimeout {
            core.metrics.frameRejected(loop: loop.index, reason: "first_frame_timeout")
            channel.close("no frame within the first-frame deadline")
        } else if let since = channel.partialSince, now - since > core.readTimeout {
            core.metrics.frameRejected(loop: loop.index, reason: "read_timeout")
            let what = channel.state == .handshaking ? "TLS handshake" : "frame"
            channel.close("\(what) not completed within the read deadline")
        } else if calls.isEmpty && channel.partialSince == nil && now - channel.lastActivity > core.idleTimeout {
            channel.close("idle timeout")
        }
    }
}
