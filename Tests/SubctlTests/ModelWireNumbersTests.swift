import SubctlKit
import Testing
import Wire

/// `StatusCode` is written by hand (gRPC's codes, whose names carry no enum prefix); this holds
/// its numbers to `subscriptions.rpc.v1.StatusCode` in the schema table. The other enums are
/// generated from proto/.
@Suite("Hand-written enums agree with proto/")
struct ModelWireNumbersTests {
    func numbers(_ enumName: String) throws -> [String: Int] {
        let found = try #require(MessageCatalog.standard.enums(matching: enumName).first)
        return Dictionary(uniqueKeysWithValues: found.values.map { ($0.name, $0.number) })
    }

    @Test("StatusCode")
    func statusCodes() throws {
        let wire = try numbers("subscriptions.rpc.v1.StatusCode")
        for code in StatusCode.allKnown { #expect(wire[code.name] == code.rawValue, "\(code.name)") }
        #expect(wire.count == StatusCode.allKnown.count)
    }
}
