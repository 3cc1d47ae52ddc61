import Testing
import Wire

@testable import EntitlementService

/// Which position an `AppendEvents` batch or a `RecordDeliveries` record may say is covered:
/// the next holder of the lease does nothing at or below it again, so one that leaves events or
/// attempts behind must not cover their positions.
@Suite("Event log and webhooks: what a batch or a record covers")
struct EventBatchCoverageTests {
    static func events(_ positions: [UInt64]) -> [Event] {
        positions.enumerated().map { Event(id: "evt_\($0.offset)", type: "access.granted", position: $0.element) }
    }

    @Test("a batch that takes every pending event covers the position computed through")
    func everything() {
        #expect(EventPublisher.covered(through: 9, leftBehind: [Event]()) == 9)
    }

    @Test("a batch that ends inside one change's events covers only the positions before that change")
    func splitChange() {
        // Pending: 5, 5, 5, 6, 6, 7; the batch takes the first four.
        let pending = Self.events([5, 5, 5, 6, 6, 7])
        #expect(EventPublisher.covered(through: 7, leftBehind: pending.dropFirst(4)) == 5)
        // An access end that fell due carries its grant's older position.
        #expect(EventPublisher.covered(through: 7, leftBehind: Self.events([7, 3, 7])) == 2)
        #expect(EventPublisher.covered(through: 7, leftBehind: Self.events([0])) == 0)
        // Never past what was computed.
        #expect(EventPublisher.covered(through: 4, leftBehind: Self.events([9])) == 4)
    }

    @Test("a webhook record that leaves attempts for the next one says delivered only up to just before them")
    func webhookRecord() {
        #expect(WebhookDeliverer.recordable(40, firstLeftOut: nil) == 40)
        // A dead letter at 17 waits for the next record: the delivered position stays below it.
        #expect(WebhookDeliverer.recordable(40, firstLeftOut: 17) == 16)
        #expect(WebhookDeliverer.recordable(10, firstLeftOut: 17) == 10)
        #expect(WebhookDeliverer.recordable(10, firstLeftOut: 1) == 0)
    }
}
