import Model
import SubctlKit
import Testing
import Wire

/// The Swift model types carry the wire numbers of the proto enums they mirror; these tests
/// read the numbers from the generated descriptors so the two cannot drift apart.
@Suite("Model and proto enums agree")
struct ModelWireNumbersTests {
    func numbers(_ enumName: String) throws -> [String: Int] {
        let found = try #require(MessageCatalog.standard.enums(matching: enumName).first)
        return Dictionary(uniqueKeysWithValues: found.values.map { ($0.name, $0.number) })
    }

    @Test("SubscriptionState")
    func subscriptionState() throws {
        let wire = try numbers("subscriptions.common.v1.SubscriptionState")
        for state in SubscriptionState.allCases {
            let name = "SUBSCRIPTION_STATE_" + state.description.uppercased()
            #expect(wire[name] == Int(state.rawValue), "\(name)")
        }
        #expect(wire.count == SubscriptionState.allCases.count + 1)  // plus UNSPECIFIED
    }

    @Test("Store and Environment")
    func storeAndEnvironment() throws {
        let stores = try numbers("subscriptions.common.v1.Store")
        for store in Store.allCases {
            #expect(stores["STORE_" + store.description.uppercased()] == Int(store.rawValue))
        }
        let environments = try numbers("subscriptions.common.v1.Environment")
        for environment in StoreEnvironment.allCases {
            #expect(environments["ENVIRONMENT_" + environment.description.uppercased()] == Int(environment.rawValue))
        }
    }

    @Test("StatusCode")
    func statusCodes() throws {
        let wire = try numbers("subscriptions.rpc.v1.StatusCode")
        for code in StatusCode.allKnown { #expect(wire[code.name] == code.rawValue, "\(code.name)") }
        #expect(wire.count == StatusCode.allKnown.count)
    }
}
