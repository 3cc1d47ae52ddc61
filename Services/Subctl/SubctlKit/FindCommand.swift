public import Wire

/// `subctl find VALUE`: what a value a customer quotes names (Verifier/Find), and with
/// `--entitlement`, each account's access per capability now (Entitlement/ListEntitlements).
public struct FindCommand: Sendable, Equatable {
    public var request: FindRequest
    /// The entitlement service to ask about access; nil: access is not shown.
    public var entitlement: CallOptions?

    public init(request: FindRequest, entitlement: CallOptions? = nil) {
        self.request = request
        self.entitlement = entitlement
    }

    static let method = "subscriptions.verifier.v1.Verifier/Find"
    static let listEntitlements = "subscriptions.entitlement.v1.Entitlement/ListEntitlements"
}
