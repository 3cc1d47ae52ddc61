import Synchronization

/// The product policy in force, read from a file, and its reload.
///
/// `policy` is what every check reads: a read lock held for the copy of one reference, never
/// across I/O. `reload()` reads and checks the file with no lock that readers take, and swaps
/// the new policy in only when the whole file is good; a bad file leaves the old policy in force
/// and reports why. Checks in flight keep the policy they read; the next ones see the new one,
/// so a reload drops no request. Reloads take turns, whatever starts them (SIGHUP, the
/// `ReloadPolicy` RPC).
public final class PolicyStore: Sendable {
    /// The policy file.
    public let path: String
    private let inForce: ReadWriteLock<ProductPolicy>
    /// Held for a whole reload, so that the file read last is the one that stays in force.
    private let reloading = Mutex<Void>(())

    private init(path: String, policy: ProductPolicy) {
        self.path = path
        self.inForce = ReadWriteLock(policy)
    }

    /// A store holding the policy in the file at `path`. Throws `PolicyError` when the file
    /// cannot be read or has a problem (with its line), so a service does not start without a
    /// good policy.
    public static func load(path: String) throws(PolicyError) -> PolicyStore {
        PolicyStore(path: path, policy: try ProductPolicy.load(path: path))
    }

    /// The policy in force.
    public var policy: ProductPolicy { inForce.read { copy $0 } }

    /// Reads the file again and puts it in force, returning the policy now in force (its
    /// `version`, `productCount`, `capabilityCount`). Throws `PolicyError` when the file cannot
    /// be read or has a problem; the old policy then stays in force. Blocks while it reads.
    @discardableResult
    public func reload() throws(PolicyError) -> ProductPolicy {
        try reloading.withLock { _ throws(PolicyError) -> ProductPolicy in
            let next = try ProductPolicy.load(path: path)
            inForce.write { $0 = next }
            return next
        }
    }
}
