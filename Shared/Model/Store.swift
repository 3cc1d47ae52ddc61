/// A store that sells subscriptions. Raw values are the wire numbers of
/// `subscriptions.common.v1.Store`.
public enum Store: Int32, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case apple = 1
    case google = 2

    public var description: String {
        switch self {
        case .apple: "apple"
        case .google: "google"
        }
    }
}

/// Where a purchase was made. Raw values are the wire numbers of
/// `subscriptions.common.v1.Environment`.
public enum StoreEnvironment: Int32, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case production = 1
    /// Apple Sandbox; Google test purchases.
    case sandbox = 2

    public var description: String {
        switch self {
        case .production: "production"
        case .sandbox: "sandbox"
        }
    }
}
