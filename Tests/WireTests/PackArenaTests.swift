import Testing
import Wire

/// Packing borrows the thread's unpack block: messages that outgrow it spill into chunks of
/// their own, and a pack inside an unpack's scope gives back only what it took.
@Suite("Pack arena")
struct PackArenaTests {
    @Test("a string larger than the 64 KiB block, and thousands of small ones past it, round-trip")
    func largeMessages() throws {
        let big = HealthResponse(service: String(repeating: "s", count: 200_000), version: "v")
        #expect(try HealthResponse(serialized: big.serialized()) == big)
        let many = ListEntitlementsResponse(
            entitlements: (0..<5_000).map {
                EntitlementEntry(capability: "capability-\($0)-" + String(repeating: "c", count: 40), grants: [])
            })
        let bytes = many.serialized()
        #expect(bytes.count > 64 * 1024 * 3)
        #expect(try ListEntitlementsResponse(serialized: bytes) == many)
        // Appending to a buffer that already holds bytes keeps them.
        var output: [UInt8] = [1, 2, 3]
        many.serialize(appendingTo: &output)
        #expect(Array(output.prefix(3)) == [1, 2, 3] && Array(output.dropFirst(3)) == bytes)
    }

    @Test("a pack while an unpacked envelope is in use leaves the envelope's memory alone")
    func nestedScopes() throws {
        var frame: [UInt8] = []
        let payload = Array(repeating: UInt8(7), count: 1000)
        payload.withUnsafeBytes { bytes in
            Envelope.appendFrame(
                to: &frame, callID: 9, kind: .response, payload: bytes, status: .notFound, statusMessage: "gone")
        }
        let large = ListEntitlementsResponse(
            entitlements: (0..<2_000).map { EntitlementEntry(capability: "capability-\($0)", grants: []) })
        let seen = try frame.withUnsafeBytes { raw in
            try Envelope.withDecoded(UnsafeRawBufferPointer(rebasing: raw[4...])) { view in
                // Packs and unpacks in the middle of the envelope's scope.
                let packed = large.serialized()
                _ = try ListEntitlementsResponse(serialized: packed)
                return (view.callID, view.statusCode, view.statusText, Array(view.payload))
            }
        }
        #expect(seen.0 == 9 && seen.1 == .notFound && seen.2 == "gone" && seen.3 == payload)
    }
}
