import Testing
import Wire

@Suite("Envelope")
struct EnvelopeTests {
    @Test("a request frame round-trips every field")
    func requestRoundTrip() throws {
        var out: [UInt8] = []
        let payload: [UInt8] = [1, 2, 3, 0, 255]
        "pkg.Service/Method".withCString { method in
            payload.withUnsafeBytes { bytes in
                Envelope.appendFrame(
                    to: &out, callID: 42, kind: .request, method: method, timeoutMilliseconds: 1500, payload: bytes,
                    window: 8)
            }
        }
        let length = Int(out[0]) << 24 | Int(out[1]) << 16 | Int(out[2]) << 8 | Int(out[3])
        #expect(length == out.count - 4)
        try out.withUnsafeBytes { raw in
            try Envelope.withDecoded(UnsafeRawBufferPointer(rebasing: raw[4...])) { view in
                #expect(view.callID == 42)
                #expect(view.kind == .request)
                #expect(view.methodName == "pkg.Service/Method")
                #expect(view.timeoutMilliseconds == 1500)
                #expect([UInt8](view.payload) == payload)
                #expect(view.statusCode == .ok)
                #expect(view.window == 8)
            }
        }
    }

    @Test("an error response carries its code and message; an OK one carries no status")
    func statusRoundTrip() throws {
        var failed: [UInt8] = []
        Envelope.appendFrame(
            to: &failed, callID: 7, kind: .response, status: .permissionDenied, statusMessage: "verifier may not")
        try failed.withUnsafeBytes { raw in
            try Envelope.withDecoded(UnsafeRawBufferPointer(rebasing: raw[4...])) { view in
                #expect(view.statusCode == .permissionDenied)
                #expect(view.statusText == "verifier may not")
            }
        }
        var ok: [UInt8] = []
        Envelope.appendFrame(to: &ok, callID: 7, kind: .response)
        // call_id (2 bytes) and kind (2 bytes) only.
        #expect(ok == [0, 0, 0, 4, 0x08, 7, 0x10, 2])
    }

    @Test("bytes that are not an envelope are refused with the reason")
    func garbage() {
        let garbage: [UInt8] = [0x0f, 0xff]
        #expect {
            try garbage.withUnsafeBytes { raw in try Envelope.withDecoded(raw) { _ in } }
        } throws: { error in
            "\(error)"
                == "frame is not a valid subscriptions.rpc.v1.Envelope: unsupported wire type 7 for field 1 at byte 0"
        }
        let truncated: [UInt8] = [0x2a, 10, 1, 2]
        #expect {
            try truncated.withUnsafeBytes { raw in try Envelope.withDecoded(raw) { _ in } }
        } throws: { error in
            "\(error)".hasSuffix("field 5 at byte 0 declares 10 bytes but 2 remain")
        }
    }

    @Test("health messages round-trip; a malformed payload is INVALID_ARGUMENT naming the message")
    func healthMessages() throws {
        let response = HealthResponse(
            status: .serving, service: "ledger", version: "1.2.3", uptimeMilliseconds: 99,
            serverTimeMilliseconds: 1_790_000_000_000, connections: 3)
        #expect(try HealthResponse(serialized: response.serialized()) == response)
        #expect(HealthRequest().serialized() == [])
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.common.v1.HealthResponse: truncated varint of field 4 at byte 0")
        ) {
            try HealthResponse(serialized: [0x20, 0x80])
        }
    }

    @Test("status codes have gRPC's names and numbers")
    func statusCodes() {
        #expect(StatusCode.allKnown.map(\.rawValue) == Array(0...16))
        #expect(StatusCode.deadlineExceeded.name == "DEADLINE_EXCEEDED")
        #expect(StatusCode.internalError.name == "INTERNAL")
        #expect(StatusCode(rawValue: 99).name == "CODE_99")
    }
}
