import Crypto
public import Model
import Synchronization

/// The product policy: which store products grant which capabilities, and which subscription
/// states give access. Policy is data: it is read from a file (`init(parsing:)`,
/// `load(path:)`), and a `PolicyStore` holds the one in force.
///
/// The file is UTF-8 text, one statement per line; `#` starts a comment that runs to the end of
/// the line; blank lines, indentation and extra spaces or tabs mean nothing:
///
/// ```
/// # comments and blank lines are ignored
/// capability pro
///   apple com.example.pro.monthly
///   google pro_subscription               # every base plan of the product
///   google pro_subscription:annual-plan   # one base plan only
/// capability lifetime
///   apple com.example.lifetime
///   google lifetime_unlock
/// access grace_period yes   # one line per state to change; the others keep their default
/// access billing_retry no
/// ```
///
/// - `capability NAME` starts a capability; the product lines after it (up to the next
///   `capability` or `access` line) grant it. A capability must list at least one product and
///   appear once. Names: 1 to 64 ASCII letters, digits, `_`, `.` or `-`, starting with a letter;
///   case matters.
/// - `apple PRODUCT_ID` grants the capability to that App Store product. `google PRODUCT_ID`
///   grants it to that Play product with any base plan; `google PRODUCT_ID:BASE_PLAN_ID` only
///   with that base plan. Product ids: 1 to 150 ASCII letters, digits, `_`, `.` or `-`,
///   starting with a letter or digit; base plan ids: 1 to 63 lowercase letters, digits or `-`,
///   starting with a letter or digit. A product may appear once per capability, and in any
///   number of capabilities (one product grants several, many products grant one).
/// - `apple PRODUCT_ID duration 90d` (also on a Google line) gives a non-renewing subscription of
///   that product its length: whole hours, days or weeks (`12h`, `90d`, `4w`). The store does
///   not say how long a non-renewing subscription lasts, the app does: a non-renewing purchase
///   of a product without a duration grants nothing.
/// - `access STATE yes|no` sets whether a subscription in that normalized state has access:
///   `active`, `cancelled`, `grace_period`, `billing_retry`, `account_hold`, `paused`,
///   `expired`, `revoked`, `pending`, each at most once. Unset states keep the defaults of
///   `AccessRules.default` (active, cancelled and grace_period yes; the rest no); `expired`,
///   `revoked` and `pending` can never be yes.
/// - At most `maximumBytes` bytes and `maximumLines` lines, and at least one capability.
///
/// Any problem refuses the whole file with a `PolicyError` that names the line: a malformed
/// line, an unknown store or state, a value other than yes or no, a duplicate capability,
/// product or access line, a capability without products, a product line outside a capability,
/// a bad name, or a file too large.
///
/// A copy is one reference: the tables are built once, when the policy loads, and lookups
/// (`capabilities(store:productID:basePlanID:)`, `capabilityID(named:)`) only read them.
public struct ProductPolicy: Sendable, Hashable, CustomStringConvertible {
    /// The largest policy file, in bytes (1 MiB).
    public static let maximumBytes = 1 << 20
    /// The most lines a policy file may have.
    public static let maximumLines = 100_000

    /// The products of one Google product id: those for every base plan, and per base plan the
    /// union of those and the plan's own.
    struct GoogleGrants: Sendable {
        var anyBasePlan: CapabilitySet
        var byBasePlan: [String: CapabilitySet]
    }

    /// The tables, built once and never changed.
    final class Storage: Sendable {
        let capabilities: [String]
        let ids: [String: CapabilityID]
        let products: [[StoreProduct]]
        let apple: [String: CapabilitySet]
        let google: [String: GoogleGrants]
        let access: AccessRules
        let productCount: Int
        let canonicalText: String
        let version: String
        let durations: [StoreProduct: Int64]
        /// Unique to this policy object in the process: caches keyed by it never mistake one
        /// policy for another (two loads of one file get two generations).
        let generation = ProductPolicy.generations.add(1, ordering: .relaxed).newValue

        init(
            capabilities: [String], ids: [String: CapabilityID], products: [[StoreProduct]],
            apple: [String: CapabilitySet], google: [String: GoogleGrants], access: AccessRules, productCount: Int,
            canonicalText: String, version: String, durations: [StoreProduct: Int64]
        ) {
            self.capabilities = capabilities
            self.ids = ids
            self.products = products
            self.apple = apple
            self.google = google
            self.access = access
            self.productCount = productCount
            self.canonicalText = canonicalText
            self.version = version
            self.durations = durations
        }
    }

    private let storage: Storage
    fileprivate static let generations = Atomic<UInt64>(0)

    /// The policy written in `text`, in the format above. Throws `PolicyError` naming the line of
    /// the first problem.
    public init(parsing text: String) throws(PolicyError) {
        try self.init(parsing: Array(text.utf8))
    }

    /// The policy written in the UTF-8 bytes `bytes`, in the format above. Throws `PolicyError`
    /// naming the line of the first problem.
    public init(parsing bytes: [UInt8]) throws(PolicyError) {
        let (blocks, access, durations) = try PolicyFileParser.parse(bytes)
        self.init(checked: blocks.map { ($0.name, $0.products) }, access: access, durations: durations)
    }

    /// A policy built in code: each capability with the products that grant it. The same rules
    /// as for a file apply; errors have no line. Throws `PolicyError` for no capabilities, a
    /// capability without products, a product listed twice in one capability, a bad name or id,
    /// or an Apple product with a base plan.
    public init(
        capabilities: [String: [StoreProduct]], access: AccessRules = .default, durations: [StoreProduct: Int64] = [:]
    ) throws(PolicyError) {
        guard !capabilities.isEmpty else {
            throw PolicyError(.noCapabilities, line: nil, "the policy defines no capability")
        }
        guard capabilities.count <= Int(UInt16.max) else {
            throw PolicyError(.tooLarge, line: nil, "more than \(UInt16.max) capabilities")
        }
        for (name, products) in capabilities.sorted(by: { $0.key < $1.key }) {
            if let problem = PolicyFileParser.capabilityNameProblem(name) {
                throw PolicyError(.badCapabilityName, line: nil, problem)
            }
            guard !products.isEmpty else {
                throw PolicyError(.emptyCapability, line: nil, "capability \(name) lists no products")
            }
            var seen = Set<StoreProduct>()
            for product in products {
                guard seen.insert(product).inserted else {
                    throw PolicyError(
                        .duplicateProduct, line: nil, "\(product) is listed twice in capability \(name)")
                }
                if let problem = PolicyFileParser.productIDProblem(product.productID) {
                    throw PolicyError(.badProductID, line: nil, problem)
                }
                guard let basePlanID = product.basePlanID else { continue }
                if product.store == .apple {
                    throw PolicyError(
                        .badBasePlanID, line: nil, "apple products have no base plan: \(product.productID)")
                }
                if let problem = PolicyFileParser.basePlanIDProblem(basePlanID) {
                    throw PolicyError(.badBasePlanID, line: nil, problem)
                }
            }
        }
        for (product, duration) in durations where duration <= 0 {
            throw PolicyError(.badDuration, line: nil, "\(product) has a duration of \(duration) ms")
        }
        self.init(checked: capabilities.map { ($0.key, $0.value) }, access: access, durations: durations)
    }

    /// Builds the tables from capabilities whose names and products have been checked.
    private init(
        checked: [(name: String, products: [StoreProduct])], access: AccessRules, durations: [StoreProduct: Int64]
    ) {
        let sorted = checked.sorted { $0.name < $1.name }
        precondition(sorted.count <= Int(UInt16.max), "more capabilities than a CapabilityID can number")
        var ids: [String: CapabilityID] = [:]
        var products: [[StoreProduct]] = []
        var apple: [String: [CapabilityID]] = [:]
        var googleAny: [String: [CapabilityID]] = [:]
        var googlePlans: [String: [String: [CapabilityID]]] = [:]
        var distinct = Set<StoreProduct>()
        var canonical = ""
        for (index, capability) in sorted.enumerated() {
            let id = CapabilityID(rawValue: UInt16(index))
            ids[capability.name] = id
            let list = Array(Set(capability.products)).sorted()
            products.append(list)
            canonical += "capability \(capability.name)\n"
            for product in list {
                let duration = durations[product].map { " duration \(PolicyFileParser.durationText($0))" } ?? ""
                canonical += "\(product)\(duration)\n"
                distinct.insert(product)
                switch (product.store, product.basePlanID) {
                case (.apple, _): apple[product.productID, default: []].append(id)
                case (.google, nil): googleAny[product.productID, default: []].append(id)
                case (.google, let plan?): googlePlans[product.productID, default: [:]][plan, default: []].append(id)
                case (.promotional, _): break  // a policy file names store products only
                }
            }
        }
        for state in SubscriptionState.allCases {
            canonical += "access \(state) \(access.allows(state) ? "yes" : "no")\n"
        }
        var google: [String: GoogleGrants] = [:]
        for productID in Set(googleAny.keys).union(googlePlans.keys) {
            let any = CapabilitySet(googleAny[productID] ?? [])
            let plans = (googlePlans[productID] ?? [:]).mapValues { any.union(CapabilitySet($0)) }
            google[productID] = GoogleGrants(anyBasePlan: any, byBasePlan: plans)
        }
        storage = Storage(
            capabilities: sorted.map(\.name), ids: ids, products: products,
            apple: apple.mapValues { CapabilitySet($0) }, google: google, access: access,
            productCount: distinct.count, canonicalText: canonical,
            version: Digest.sha256Hex(Array(canonical.utf8)), durations: durations)
    }

    /// How long a non-renewing subscription of this product lasts (milliseconds), or nil when the
    /// policy gives no duration: for Google that base plan's own, else the product's.
    public func duration(store: Store, productID: String, basePlanID: String?) -> Int64? {
        guard !storage.durations.isEmpty else { return nil }
        if store == .google, let basePlanID,
            let planned = storage.durations[StoreProduct(store: store, productID: productID, basePlanID: basePlanID)]
        {
            return planned
        }
        return storage.durations[StoreProduct(store: store, productID: productID)]
    }

    /// Every capability, sorted by name; a capability's `CapabilityID` is its position here.
    public var capabilities: [String] { storage.capabilities }

    /// How many capabilities the policy defines.
    public var capabilityCount: Int { storage.capabilities.count }

    /// How many distinct product entries (store, product id, base plan or none) the policy
    /// lists, each counted once however many capabilities it grants.
    public var productCount: Int { storage.productCount }

    /// Which states give access.
    public var access: AccessRules { storage.access }

    /// The SHA-256, in lowercase hex, of `canonicalText`: the same for every file that means the
    /// same policy (whatever its order, comments, spacing, or defaults spelled out).
    public var version: String { storage.version }

    /// A number no other policy object of this process has (see `Storage.generation`).
    public var generation: UInt64 { storage.generation }

    /// The policy in a canonical form of the file format: capabilities sorted by name, each
    /// with its products sorted (store, product id, base plan), then one `access` line for every
    /// state, in the order of `SubscriptionState.allCases`.
    public var canonicalText: String { storage.canonicalText }

    /// The id of the capability called `name`, or `nil` when the policy has no such capability.
    public func capabilityID(named name: String) -> CapabilityID? { storage.ids[name] }

    /// The name of capability `id`. `id` must come from this policy.
    public func name(of id: CapabilityID) -> String { storage.capabilities[Int(id.rawValue)] }

    /// The products that grant capability `id`, sorted. `id` must come from this policy.
    public func products(granting id: CapabilityID) -> [StoreProduct] { storage.products[Int(id.rawValue)] }

    /// The capabilities a product grants: for Apple by product id (the base plan, which holds
    /// Apple's subscription group, is not looked at); for Google the product's entries without a
    /// base plan, and with `basePlanID` also that base plan's. Empty for a product the policy
    /// does not name. A promotional grant's product id is the capability it grants (none when the
    /// policy has no such capability). Allocates nothing for a store product.
    public func capabilities(store: Store, productID: String, basePlanID: String?) -> CapabilitySet {
        switch store {
        case .promotional:
            return storage.ids[productID].map { CapabilitySet([$0]) } ?? .empty
        case .apple:
            return storage.apple[productID] ?? .empty
        case .google:
            guard let grants = storage.google[productID] else { return .empty }
            guard let basePlanID, let planned = grants.byBasePlan[basePlanID] else { return grants.anyBasePlan }
            return planned
        }
    }

    /// The capabilities `subscription`'s product grants: its store, product id and base plan.
    public func capabilities(of subscription: Subscription) -> CapabilitySet {
        capabilities(
            store: subscription.key.store, productID: subscription.productID, basePlanID: subscription.basePlanID)
    }

    /// What `subscription` means for capability `capability` at `at` (epoch milliseconds):
    /// `noGrant` when its product does not grant it, otherwise `AccessRules.decision(for:at:)`
    /// under this policy's rules.
    public func decision(for subscription: Subscription, capability: CapabilityID, at: Int64) -> AccessDecision {
        guard capabilities(of: subscription).contains(capability) else { return .denied(.noGrant) }
        return storage.access.decision(for: subscription, at: at)
    }

    /// What `subscriptions` together mean for the capability called `capability` at `at`: the
    /// `AccessDecision.union` of each one's decision, `unknownCapability` when the policy has no
    /// such capability, and `noGrant` when there are no subscriptions.
    public func decision(
        for subscriptions: some Sequence<Subscription>, capability: String, at: Int64
    ) -> AccessDecision {
        guard let id = capabilityID(named: capability) else { return .denied(.unknownCapability) }
        return AccessDecision.union(subscriptions.lazy.map { decision(for: $0, capability: id, at: at) })
    }

    /// Policies are equal when their versions are, that is when they mean the same.
    public static func == (lhs: ProductPolicy, rhs: ProductPolicy) -> Bool { lhs.version == rhs.version }

    public func hash(into hasher: inout Hasher) { hasher.combine(version) }

    /// `policy <version prefix> (N capabilities, M products)`.
    public var description: String {
        "policy \(version.prefix(12)) (\(capabilityCount) capabilities, \(productCount) products)"
    }
}
