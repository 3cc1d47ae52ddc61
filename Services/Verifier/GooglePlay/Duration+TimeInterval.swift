import Foundation

extension Duration {
    /// The duration in (fractional) seconds, for arithmetic with `Date`.
    var timeInterval: TimeInterval { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
