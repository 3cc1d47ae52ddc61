public import Foundation

extension Duration {
    /// The duration in (fractional) seconds, for arithmetic with `Date` and for URL request
    /// timeouts.
    public var timeInterval: TimeInterval { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
