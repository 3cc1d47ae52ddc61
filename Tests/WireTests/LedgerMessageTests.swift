import Model
import Testing
import Wire

@Suite("Ledger and common messages")
struct LedgerMessageTests {
    @Test(
        "every field survives a round trip, and re-encoding gives the same bytes",
        arguments: LedgerFixtures.fullMessages)
    func roundTrip(_ message: MessageCase) throws {
        let bytes = message.value.serialized()
        #expect(!bytes.isEmpty)
        let decoded = try message.decode(bytes)
        #expect(message.isEqual(decoded))
        #expect(decoded.serialized() == bytes)
    }

    @Test(
        "the default value encodes to zero bytes and zero bytes decode to it", arguments: LedgerFixtures.defaultMessages
    )
    func defaultIsEmpty(_ message: MessageCase) throws {
        #expect(message.value.serialized() == [])
        #expect(message.isEqual(try message.decode([])))
    }

    /// Every type the fixtures cover, by name and decoder.
    static let allTypes: [MessageCase] = LedgerFixtures.fullMessages

    @Test("bytes that are not the message are INVALID_ARGUMENT naming the type and the problem", arguments: allTypes)
    func malformed(_ message: MessageCase) {
        // Field 1, length-delimited, declares 5 bytes where 1 follows.
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid \(message.protoName): field 1 at byte 0 declares 5 bytes but 1 remain")
        ) {
            _ = try message.decode([0x0a, 0x05, 0x01])
        }
        #expect(
            throws: RPCError(
                .invalidArgument, "payload is not a valid \(message.protoName): truncated varint of field 3 at byte 0")
        ) {
            _ = try message.decode([0x18, 0x80])
        }
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid \(message.protoName): unsupported wire type 7 for field 1 at byte 0")
        ) {
            _ = try message.decode([0x0f, 0x01])
        }
    }

    @Test("a malformed sub-message is refused though the outer framing is valid")
    func malformedSubMessage() {
        // GetSubscriptionRequest.key holds a truncated varint.
        #expect(
            throws: RPCError(
                .invalidArgument,
                "payload is not a valid subscriptions.ledger.v1.GetSubscriptionRequest: a field has a value of the wrong type"
            )
        ) {
            _ = try GetSubscriptionRequest(serialized: [0x0a, 0x02, 0x08, 0x80])
        }
    }

    @Test("large messages: hundreds of elements and a 64 KiB payload round-trip")
    func large() throws {
        let chunk = SnapshotChunk(
            subscriptions: (0..<500).map(LedgerFixtures.subscription), links: (0..<500).map(LedgerFixtures.link),
            complete: false, position: 12_345)
        let bytes = chunk.serialized()
        #expect(bytes.count > 200_000)
        #expect(try SnapshotChunk(serialized: bytes) == chunk)

        var event = LedgerFixtures.event(1)
        event.rawPayload = String(repeating: "é🎟️x", count: 64 * 1024 / 9)
        let change = Change(position: 1, kind: .subscription, events: Array(repeating: event, count: 16))
        #expect(try Change(serialized: change.serialized()) == change)
    }

    @Test("one value encodes the same way alone and inside its container")
    func nestedEqualsStandalone() throws {
        let subscription = LedgerFixtures.subscription(3)
        let inner = subscription.serialized()
        // GetSubscriptionResponse: field 1, length-delimited, then the subscription's own bytes.
        let outer = GetSubscriptionResponse(subscription: subscription).serialized()
        #expect(outer.first == 0x0a)
        #expect(Array(outer.suffix(inner.count)) == inner)
        #expect(try Subscription(serialized: inner) == subscription)
    }
}
