import Model
import Testing
import Wire

/// The wire walk that holds a payload to its budget before protobuf-c builds it, and the
/// in-place envelope scan the server reads requests with.
@Suite("Decode budgets and the envelope scan")
struct DecodeBudgetTests {
    /// A ListInboxResponse of `count` empty entries (field 1, length 0).
    static func emptyEntries(_ count: Int) -> [UInt8] { (0..<count).flatMap { _ in [UInt8(0x0a), 0x00] } }

    static func decode(_ bytes: [UInt8], _ budget: DecodeBudget) -> Result<ListInboxResponse, RPCError> {
        DecodeBudget.$current.withValue(budget) {
            Result { () throws(RPCError) -> ListInboxResponse in try ListInboxResponse(serialized: bytes) }
        }
    }

    @Test("repeated elements past the budget are refused by name; at the budget they decode")
    func repeatedElements() throws {
        let budget = DecodeBudget(maxRepeated: 5)
        #expect(try Self.decode(Self.emptyEntries(5), budget).get().entries.count == 5)
        #expect(
            Self.decode(Self.emptyEntries(6), budget).failureText
                == "subscriptions.ledger.v1.ListInboxResponse.entries: more than 5 elements")
    }

    @Test("fields in the whole tree, unknown fields and nesting depth each have their limit")
    func otherLimits() {
        #expect(
            Self.decode(Self.emptyEntries(10), DecodeBudget(maxFields: 9)).failureText
                == "subscriptions.ledger.v1.ListInboxResponse: more than 9 fields in all")
        // Field 15, varint 0, three times: fields this schema does not know.
        let unknown: [UInt8] = [0x78, 0x00, 0x78, 0x00, 0x78, 0x00]
        #expect(
            Self.decode(unknown, DecodeBudget(maxUnknownFields: 2)).failureText
                == "subscriptions.ledger.v1.ListInboxResponse: more than 2 fields this schema does not know")
        #expect((try? Self.decode(unknown, DecodeBudget(maxUnknownFields: 3)).get()) != nil)
        #expect(
            Self.decode(Self.emptyEntries(1), DecodeBudget(maxDepth: 0)).failureText
                == "subscriptions.ledger.v1.InboxEntry is nested more than 0 messages deep")
    }

    @Test("the standard budget holds every decode without a method's own: 10,001 elements are refused")
    func standardBudget() {
        let result = Self.decode(Self.emptyEntries(10_001), .standard)
        #expect(result.failureCode == .resourceExhausted)
    }

    @Test("a scanned envelope says what protobuf-c's does, for every field of a request")
    func scanMatchesProtobufC() throws {
        var frame: [UInt8] = []
        "a.v1.S/M".withCString { method in
            [1, 2, 3].withUnsafeBytes { payload in
                Envelope.appendFrame(
                    to: &frame, callID: 300, kind: .request, method: method, timeoutMilliseconds: 7000,
                    payload: payload, window: 9)
            }
        }
        let body = Array(frame.dropFirst(4))
        try body.withUnsafeBytes { raw in
            let scanned = try Envelope.scanned(raw)
            try Envelope.withDecoded(raw) { decoded in
                #expect(scanned.callID == decoded.callID && scanned.rawKind == decoded.rawKind)
                #expect(Array(scanned.method) == Array(decoded.method))
                #expect(scanned.timeoutMilliseconds == decoded.timeoutMilliseconds)
                #expect(Array(scanned.payload) == Array(decoded.payload) && scanned.window == decoded.window)
            }
            #expect(Envelope.leadingMethod(in: raw).map { String(decoding: $0, as: UTF8.self) } == "a.v1.S/M")
        }
    }

    @Test("a scanned envelope refuses a field of the wrong wire type and too many unknown fields")
    func scanRefusals() {
        func failure(_ bytes: [UInt8], unknown: Int = 16) -> String? {
            bytes.withUnsafeBytes { raw -> String? in
                do {
                    _ = try Envelope.scanned(raw, maxUnknownFields: unknown)
                    return nil
                } catch {
                    return (error as? Envelope.DecodeFailure)?.reason
                }
            }
        }
        #expect(failure([0x0a, 0x00]) == "field 1 is not a varint")
        #expect(failure([0x18, 0x01]) == "field 3 is not length-delimited")
        #expect(
            failure([0x80, 0x01, 0x00, 0x80, 0x01, 0x00], unknown: 1) == "more than 1 fields this version does not know"
        )
        #expect(failure([0x08]) == "truncated varint of field 1 at byte 0")
        // A method with an embedded NUL is the whole name, not the part before it.
        let name: [UInt8] = [0x1a, 0x03, 0x61, 0x00, 0x62]
        let method = name.withUnsafeBytes { raw in (try? Envelope.scanned(raw)).map { Array($0.method) } }
        #expect(method == [0x61, 0x00, 0x62])
    }
}

extension Result where Failure == RPCError {
    fileprivate var failureText: String? { if case .failure(let error) = self { error.message } else { nil } }
    fileprivate var failureCode: StatusCode? { if case .failure(let error) = self { error.code } else { nil } }
}
