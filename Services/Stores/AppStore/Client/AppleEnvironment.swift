public import Model

/// The `environment` Apple writes in signed data.
public enum AppleEnvironment: String, Sendable, Hashable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    /// StoreKit testing in Xcode: signed by Xcode, never by Apple.
    case xcode = "Xcode"
    /// StoreKit local testing: not signed by Apple either.
    case localTesting = "LocalTesting"

    /// The ledger's environment: Production is production, everything else sandbox.
    public var storeEnvironment: StoreEnvironment { self == .production ? .production : .sandbox }

    /// The App Store environment a ledger environment stands for: production or sandbox.
    public init(_ environment: StoreEnvironment) { self = environment == .production ? .production : .sandbox }
}
