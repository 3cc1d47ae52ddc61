import EntitlementService
import Foundation
import Model
import TestSupport
import Testing

@Suite("Policy store")
struct PolicyStoreTests {
    static let first = "capability pro\n  apple com.example.pro.monthly\n"
    static let second =
        "capability pro\n  apple com.example.pro.monthly\n  google pro_subscription\naccess paused yes\n"
    static let bad = "capability pro\n  apple com.example.pro.monthly\naccess grace yes\n"

    @Test("a reload with a bad file keeps the old policy and its version; a good one replaces it")
    func reload() throws {
        let path = try TemporaryFile.write(Self.first, prefix: "policy", pathExtension: "conf")
        defer { TemporaryFile.remove(path) }
        let store = try PolicyStore.load(path: path)
        let original = store.policy
        #expect(original.capabilities == ["pro"])
        #expect(store.path == path)

        try Self.bad.write(toFile: path)
        #expect(
            throws: PolicyError(
                .unknownState, line: 3,
                "unknown state \"grace\" (expected active, cancelled, grace_period, billing_retry, account_hold, "
                    + "paused, expired, revoked or pending)", path: path)
        ) { try store.reload() }
        #expect(store.policy.version == original.version)
        let pro = try #require(store.policy.capabilityID(named: "pro"))
        #expect(store.policy.capabilities(store: .google, productID: "pro_subscription", basePlanID: nil).isEmpty)

        try Self.second.write(toFile: path)
        let reloaded = try store.reload()
        #expect(reloaded.version != original.version)
        #expect(reloaded.version == (try ProductPolicy(parsing: Self.second)).version)
        #expect(store.policy.version == reloaded.version)
        #expect((reloaded.productCount, reloaded.capabilityCount) == (2, 1))
        #expect(
            Array(store.policy.capabilities(store: .google, productID: "pro_subscription", basePlanID: nil)) == [pro])
        #expect(store.policy.access.allows(.paused))

        TemporaryFile.remove(path)
        #expect(
            throws: PolicyError(.unreadable, line: nil, "cannot open: No such file or directory", path: path)
        ) { try store.reload() }
        #expect(store.policy.version == reloaded.version)
    }

    @Test("the first load refuses a missing or bad file, naming the file and the line")
    func firstLoad() throws {
        let missing = "/nonexistent/policy.conf"
        #expect(
            throws: PolicyError(.unreadable, line: nil, "cannot open: No such file or directory", path: missing)
        ) { try PolicyStore.load(path: missing) }
        let path = try TemporaryFile.write(Self.bad, prefix: "policy", pathExtension: "conf")
        defer { TemporaryFile.remove(path) }
        let error = try #require(throws: PolicyError.self) { try PolicyStore.load(path: path) }
        #expect(error.line == 3)
        #expect(error.code == .unknownState)
        #expect(error.description.hasPrefix("\(path), line 3: unknown state \"grace\""))
    }

    @Test("a file too large is refused without reading all of it")
    func tooLarge() throws {
        let path = try TemporaryFile.write(
            Self.first + String(repeating: "#", count: ProductPolicy.maximumBytes), prefix: "policy",
            pathExtension: "conf")
        defer { TemporaryFile.remove(path) }
        #expect(
            throws: PolicyError(.tooLarge, line: nil, "the file is larger than 1048576 bytes", path: path)
        ) { try PolicyStore.load(path: path) }
    }

    @Test("readers during reloads always see a whole policy, old or new")
    func readersDuringReload() async throws {
        let path = try TemporaryFile.write(Self.first, prefix: "policy", pathExtension: "conf")
        defer { TemporaryFile.remove(path) }
        let store = try PolicyStore.load(path: path)
        let versions = [
            try ProductPolicy(parsing: Self.first).version, try ProductPolicy(parsing: Self.second).version,
        ]
        let seen = await withTaskGroup(of: Set<String>.self) { group in
            group.addTask {
                for round in 0..<50 {
                    try? (round.isMultiple(of: 2) ? Self.second : Self.first).write(toFile: path)
                    _ = try? store.reload()
                }
                return []
            }
            for _ in 0..<4 {
                group.addTask {
                    var seen = Set<String>()
                    for _ in 0..<2_000 {
                        let policy = store.policy
                        let google = policy.capabilities(store: .google, productID: "pro_subscription", basePlanID: nil)
                        // Each policy read is consistent with itself: the second one has the Google product.
                        #expect(google.isEmpty == (policy.version == versions[0]))
                        seen.insert(policy.version)
                    }
                    return seen
                }
            }
            return await group.reduce(into: Set<String>()) { $0.formUnion($1) }
        }
        #expect(seen.isSubset(of: Set(versions)))
    }
}

extension String {
    /// Replaces the file at `path` with this text, atomically (readers see the old or the new file).
    fileprivate func write(toFile path: String) throws {
        try write(toFile: path, atomically: true, encoding: .utf8)
    }
}
