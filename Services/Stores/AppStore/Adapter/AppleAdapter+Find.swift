import AppStore
import Foundation

extension AppleAdapter {
    /// The original transaction ids of the purchases in a customer's App Store order (Look Up
    /// Order ID, which Apple serves in production only), each signed transaction verified as any
    /// the API answers (by the verifier of the environment it names); none when Apple says the
    /// order id is not one of this app's. Throws `AppleAdapterError` (`storeUnavailable`
    /// for a rate limit or an outage, `storeDataRefused` for signed data that does not verify).
    public func lookUpOrder(_ orderID: String) async throws -> [String] {
        guard let fallback = verifiers[.production] ?? verifiers[defaultEnvironment] else {
            throw AppleAdapterError.environmentNotServed(.production)
        }
        let signed: [String]
        do {
            signed = try await api.lookUpOrderID(orderID)
        } catch {
            throw AppleAdapterError.store(error)
        }
        var originals: [String] = []
        for jws in signed {
            let transaction: AppleTransaction
            do {
                transaction = try apiVerifier(for: jws, environment: .production, fallback: fallback)
                    .verifyTransaction(jws, now: now())
            } catch {
                throw AppleAdapterError.storeDataRefused(error)
            }
            let id = Self.storeID(of: transaction)
            if !id.isEmpty, !originals.contains(id) { originals.append(id) }
        }
        return originals
    }
}
