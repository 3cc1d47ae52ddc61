import Model
import Testing

/// The enums wiregen writes from proto/: open ones keep a number they do not know, closed ones
/// refuse it, and both name their values as the proto does.
@Suite("Generated enums")
struct ProtoEnumNumberTests {
    @Test("closed enums know only their numbers; every value names its proto value")
    func closed() {
        #expect(Store(rawValue: 4) == nil && Store(rawValue: 0) == nil && Store(rawValue: 2) == .google)
        #expect(StoreEnvironment.sandbox.protoValueName == "ENVIRONMENT_SANDBOX")
        #expect(SubscriptionState.allCases.map(\.rawValue) == Array(1...9))
        #expect(SubscriptionState.gracePeriod.description == "grace_period")
        #expect(EventKind.refundReversed.protoValueName == "EVENT_KIND_REFUND_REVERSED")
        #expect(EventKind.unknown(99).protoValueName == nil)
    }

    @Test("unknown numbers keep their number; known numbers never become .unknown")
    func unknownCases() {
        #expect(EventKind(rawValue: 29) == .unknown(29))
        #expect(EventKind(rawValue: 28) == .stateRefreshed)
        #expect(EventKind.unknown(29).rawValue == 29)
        #expect(ProductKind(rawValue: -2)?.description == "unknown(-2)")
        #expect(TransferPolicy(rawValue: 3) == .refuse)
        #expect(Ownership.allCases.map(\.rawValue) == [1, 2])
        #expect(EventKind.allCases.map(\.rawValue) == Array(1...34))
    }
}
