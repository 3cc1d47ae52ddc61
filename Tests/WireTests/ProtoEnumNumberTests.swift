import Model
import Testing
import Wire

/// The Swift enums carry the wire numbers of the proto enums they mirror; these tests read the
/// numbers from the generated descriptors so the two cannot drift apart.
@Suite("Enum numbers agree with the generated descriptors")
struct ProtoEnumNumberTests {
    /// Checks every known case against the descriptor value named `prefix` + its description in
    /// upper case, and that the descriptor has exactly those values plus `…_UNSPECIFIED` = 0.
    func check<E: CaseIterable & RawRepresentable & CustomStringConvertible>(
        _: E.Type, _ protoName: String, prefix: String
    ) throws where E.RawValue == Int32, E.AllCases == [E] {
        let wire = try #require(ProtoEnumCatalog.values(of: protoName))
        #expect(wire["\(prefix)UNSPECIFIED"] == 0)
        #expect(wire.count == E.allCases.count + 1)
        for value in E.allCases {
            let name = prefix + value.description.uppercased()
            #expect(wire[name] == value.rawValue, "\(name)")
            #expect(E(rawValue: value.rawValue)?.rawValue == value.rawValue)
        }
        #expect(E(rawValue: 0) == nil)
    }

    @Test("common.v1 enums")
    func common() throws {
        try check(ProductKind.self, "subscriptions.common.v1.ProductKind", prefix: "PRODUCT_KIND_")
        try check(Ownership.self, "subscriptions.common.v1.Ownership", prefix: "OWNERSHIP_")
        try check(EventKind.self, "subscriptions.common.v1.EventKind", prefix: "EVENT_KIND_")
        try check(TransferPolicy.self, "subscriptions.common.v1.TransferPolicy", prefix: "TRANSFER_POLICY_")
        try check(SubscriptionState.self, "subscriptions.common.v1.SubscriptionState", prefix: "SUBSCRIPTION_STATE_")
        try check(Store.self, "subscriptions.common.v1.Store", prefix: "STORE_")
        try check(StoreEnvironment.self, "subscriptions.common.v1.Environment", prefix: "ENVIRONMENT_")
    }

    @Test("unknown numbers keep their number; known numbers never become .unknown")
    func unknownCases() {
        #expect(EventKind(rawValue: 29) == .unknown(29))
        #expect(EventKind(rawValue: 28) == .stateRefreshed)
        #expect(EventKind.unknown(29).rawValue == 29)
        #expect(ProductKind(rawValue: -2)?.description == "unknown(-2)")
        #expect(TransferPolicy(rawValue: 3) == .refuse)
        #expect(Ownership.allCases.map(\.rawValue) == [1, 2])
        #expect(EventKind.allCases.map(\.rawValue) == Array(1...28))
    }
}
