import Testing
import Wire

@Suite("Envelope")
struct EnvelopeTests {
    static func frame(callID: UInt64, method: String, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        method.withCString { name in
            payload.withUnsafeBytes { bytes in
                Envelope.appendFrame(to: &out, callID: callID, kind: .request, method: name, payload: bytes)
            }
        }
        return Array(out.dropFirst(4))
    }

    @Test(
        "decodes nest and outgrow the per-thread unpack memory: a 200 KB payload inside a decoded envelope, a request inside that, all intact"
    )
    func nestedAndLargeDecodes() throws {
        let request = CheckAccessRequest(accountID: "acct-7", capability: "pro", atMilliseconds: 42).serialized()
        let large = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let outer = Self.frame(callID: 1, method: "pkg.S/Outer", payload: request)
        let big = Self.frame(callID: 2, method: "pkg.S/Big", payload: large)
        for _ in 0..<3 {
            try outer.withUnsafeBytes { outerBytes in
                try Envelope.withDecoded(outerBytes) { view in
                    #expect(view.methodName == "pkg.S/Outer")
                    // A large envelope decoded while the first is in use, then the request of the first.
                    try big.withUnsafeBytes { bigBytes in
                        try Envelope.withDecoded(bigBytes) { inner in
                            #expect(inner.callID == 2)
                            #expect([UInt8](inner.payload) == large)
                        }
                    }
                    let decoded = try CheckAccessRequest(serialized: view.payload)
                    #expect(decoded == CheckAccessRequest(accountID: "acct-7", capability: "pro", atMilliseconds: 42))
                    #expect(view.callID == 1 && [UInt8](view.payload) == request)
                }
            }
        }
    }

    @Test("threads decoding at once each get their own unpack memory")
    func concurrentDecodes() async throws {
        let frames = (0..<8).map { index in
            Self.frame(
                callID: UInt64(index + 1), method: "pkg.S/M\(index)",
                payload: [UInt8](repeating: UInt8(index), count: 100 + index * 5000))
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in frames.indices {
                group.addTask {
                    var good = 0
                    for _ in 0..<2_000 {
                        let ok = try frames[index].withUnsafeBytes { bytes in
                            try Envelope.withDecoded(bytes) { view in
                                view.callID == UInt64(index + 1) && view.methodName == "pkg.S/M\(index)"
                                    && view.payload.count == 100 + index * 5000
                                    && view.payload.allSatisfy { $0 == UInt8(index) }
                            }
                        }
                        if ok { good += 1 }
                    }
                    return good
                }
            }
            for try await good in group { #expect(good == 2_000) }
        }
    }
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
        #expect(StatusCode.internal.name == "INTERNAL")
        #expect(StatusCode(rawValue: 99).name == "CODE_99")
    }
}
