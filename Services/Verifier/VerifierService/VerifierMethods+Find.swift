import Clients
import Model
import Observability
import RPC
import Wire

extension VerifierMethods {
    /// `Find`, answered from the ledger (and the App Store for an order id). A lookup is recorded
    /// in no subscription's trail; it is logged at info level with the caller and the reason.
    static func registerFind(
        on router: RPCRouter, ledger: any LedgerClientProtocol, apple: AppleAdapter?, logger: Logger
    ) {
        var appleOrder: (@Sendable (String) async throws -> [String])?
        if let apple {
            appleOrder = { orderID in try await apple.lookUpOrder(orderID) }
        }
        let finder = SubscriberFinder(ledger: ledger, appleOrder: appleOrder)
        router.unary(VerifierRPC.find) { (context, request: FindRequest) in
            try PurchaseChecks.check(request.value, FindRequest.Limits.value)
            try PurchaseChecks.check(request.reason ?? "", FindRequest.Limits.reason)
            logger.info(
                "find",
                [
                    "actor": context.actor, "reason": request.reason ?? "",
                    "value": SubscriberFinder.shown(request.value),
                ])
            return try await finder.find(request.value)
        }
    }
}
