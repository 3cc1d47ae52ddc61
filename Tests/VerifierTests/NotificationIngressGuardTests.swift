import HTTP
import Testing
import VerifierService

@Suite("Notification ingress guard")
struct NotificationIngressGuardTests {
    @Test("valid deliveries never spend tokens; refusals do, and then the address alone gets 429")
    func onlyRefusalsSpendTokens() {
        let ingress = NotificationIngressGuard(rate: 0.001, burst: 2)
        let handler = ingress.guarded { _ in .text("ok") }
        let store = HTTPRequest(method: "POST", path: "/n", clientAddress: "17.1.1.1")
        #expect((0..<50).allSatisfy { _ in handler(store).status == 200 })
        let attacker = HTTPRequest(method: "POST", path: "/n", body: [1], clientAddress: "6.6.6.6")
        for _ in 0..<2 {
            #expect(handler(attacker).status == 200)
            ingress.refused(store: "apple", reason: "malformed", message: "bad", payload: [UInt8](), request: attacker)
        }
        let limited = handler(attacker)
        #expect(limited.status == 429)
        #expect(limited.headers.contains { $0.0 == "Retry-After" && $0.1 == "1" })
        #expect(handler(store).status == 200)
        #expect(ingress.recentSamples["apple/malformed"]?.count == 2)
    }
}
