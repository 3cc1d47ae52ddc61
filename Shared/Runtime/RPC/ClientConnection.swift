import Glibc
import Observability
import Sockets
import Wire

/// One client connection to one address. Sends calls, pairs replies with them by call id, and
/// fails every call in flight when the connection is lost. Confined to the client's loop.
final class ClientConnection: FramedChannelDelegate {
    private unowned let core: ClientCore
    let slot: EndpointSlot
    private(set) var channel: FramedChannel!
    private var calls: [UInt64: ClientCall] = [:]
    private var nextCallID: UInt64 = 1
    private var connectTimer: TimerQueue.ID?
    /// True once the server sent any frame on this connection.
    private var answered = false

    init(core: ClientCore, slot: EndpointSlot, fd: Int32, tls: TLSSession?, maxFrameLength: Int, connectTimeout: UInt64)
    {
        self.core = core
        self.slot = slot
        channel = FramedChannel(
            loop: core.loop, fd: fd, tls: tls, maxFrameLength: maxFrameLength, connecting: true)
        channel.delegate = self
        connectTimer = core.loop.schedule(at: core.loop.clock.nanoseconds() + connectTimeout) { [weak self] in
            self?.channel.close("connect timed out")
        }
    }

    var isReady: Bool { channel.isOpen && connectTimer == nil }

    /// Sends a call's request frame.
    func send(_ call: ClientCall) {
        let callID = nextCallID
        nextCallID += 1
        call.callID = callID
        call.connection = self
        calls[callID] = call
        call.method.withUnsafeBufferPointer { method in
            call.traceparent.withUnsafeBufferPointer { traceparent in
                call.request.withUnsafeBytes { payload in
                    Envelope.appendFrame(
                        to: &channel.output, callID: callID, kind: .request, method: method.baseAddress,
                        traceparent: traceparent.baseAddress,
                        timeoutMilliseconds: call.timeoutMilliseconds(now: core.loop.clock.nanoseconds()),
                        payload: payload, window: call.isStream ? call.window : 0)
                }
            }
        }
        channel.scheduleFlush()
    }

    /// Tells the server to stop a call; its reply, if one comes, is ignored.
    func cancel(_ call: ClientCall) {
        guard calls.removeValue(forKey: call.callID) != nil else { return }
        Envelope.appendFrame(to: &channel.output, callID: call.callID, kind: .cancel)
        channel.scheduleFlush()
    }

    func grant(_ call: ClientCall, _ amount: UInt32) {
        guard calls[call.callID] != nil else { return }
        Envelope.appendFrame(to: &channel.output, callID: call.callID, kind: .windowUpdate, window: amount)
        channel.scheduleFlush()
    }

    // MARK: FramedChannelDelegate

    func channelDidBecomeReady(_ channel: FramedChannel) {
        if let connectTimer { core.loop.cancel(timer: connectTimer) }
        connectTimer = nil
        core.connectionReady(self)
    }

    func channel(_ channel: FramedChannel, received frame: UnsafeRawBufferPointer) {
        do {
            answered = true
            try Envelope.withDecoded(frame) { view in
                if view.callID == 0 {
                    let reason = "server reported a protocol error: \(view.statusText)"
                    return channel.close(reason)
                }
                guard let call = calls[view.callID] else { return }  // cancelled or timed out
                switch view.kind {
                case .response, .streamEnd:
                    calls[view.callID] = nil
                    core.callEnded(call)
                    if view.statusCode == .ok {
                        call.finish(.success([UInt8](view.payload)))
                    } else {
                        call.finish(.failure(RPCError(view.statusCode, view.statusText)))
                    }
                case .streamMessage:
                    call.deliver(message: [UInt8](view.payload))
                default:
                    channel.protocolViolation("a server may not send frame kind \(view.rawKind)")
                }
            }
        } catch {
            channel.protocolViolation("\(error)")
        }
    }

    func channel(_ channel: FramedChannel, closedBecause reason: String) {
        if let connectTimer { core.loop.cancel(timer: connectTimer) }
        let wasReady = connectTimer == nil
        connectTimer = nil
        let lost = calls.values
        calls.removeAll()
        for call in lost {
            core.callEnded(call)
            call.finish(.failure(RPCError(.unavailable, "connection to \(slot.label) lost: \(reason)")))
        }
        core.connectionClosed(self, reason: reason, wasReady: wasReady, answered: answered)
    }
}

/// One address of one configured endpoint, and what is known about reaching it.
final class EndpointSlot {
    enum State { case idle, connecting, ready, backoff }

    let endpoint: String
    let host: String
    let address: SocketAddress
    var state: State = .idle
    var connection: ClientConnection?
    var failures = 0
    var retryAt: UInt64 = 0
    var lastError = ""

    init(endpoint: String, host: String, address: SocketAddress) {
        self.endpoint = endpoint
        self.host = host
        self.address = address
    }

    /// `endpoint (address)` when a name resolved to this address, else the address.
    var label: String {
        endpoint == address.description ? endpoint : "\(endpoint) (\(address))"
    }
}
