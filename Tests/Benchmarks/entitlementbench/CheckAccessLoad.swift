import BenchSupport
import Wire

/// CheckAccess calls for `pro` on random seeded accounts through the load generator, every
/// answer checked to be allowed. Request frames are encoded once, up front, one per sampled
/// account; connection `c`'s request `s` takes a pool entry scattered by a multiplicative hash.
struct CheckAccessLoad {
    let port: Int
    /// One CheckAccessRequest frame per sampled account.
    let pool: RequestPool

    init(port: Int, accounts: [String]) throws(BenchError) {
        self.port = port
        pool = try RequestPool(
            method: PurchaseWorkload.checkMethod, payloads: accounts.map { PurchaseWorkload.check($0).serialized() })
    }

    /// A generator with `clients` connections and `pipeline` requests in flight on each.
    func generator(clients: Int, pipeline: Int) throws(BenchError) -> LoadGenerator {
        let entries = UInt64(pool.count)
        let answers = AnswerCheck()
        return try LoadGenerator(
            port: port, clients: clients, pipeline: pipeline, pool: pool,
            pick: { connection, sequence in
                let mixed = UInt64(truncatingIfNeeded: connection &* 1_000_003 &+ sequence) &* 0x9E37_79B9_7F4A_7C15
                return Int((mixed >> 17) % entries)
            },
            check: { payload in answers.check(payload) })
    }
}

/// Checks that a CheckAccessResponse says allowed: field 1 (`allowed`, a varint) read straight
/// from the bytes for every answer, and every 1024th answer also decoded whole and required to
/// be allowed with reason GRANTED, which cross-checks the hand reading.
final class AnswerCheck {
    private var answers = 0

    func check(_ payload: UnsafeRawBufferPointer) -> String? {
        answers += 1
        guard let allowed = Self.allowed(payload) else { return "a CheckAccess answer is not well-formed protobuf" }
        if answers % 1024 == 1 {
            guard let response = try? CheckAccessResponse(serialized: payload) else {
                return "a CheckAccess answer does not decode"
            }
            guard response.allowed == allowed else { return "the hand reading of `allowed` disagrees with protobuf-c" }
            guard response.reason == .granted else {
                return "CheckAccess answered \(response.reason.map { "\($0)" } ?? "no reason"), not granted"
            }
        }
        return allowed ? nil : "CheckAccess answered not allowed for a seeded account"
    }

    /// The `allowed` field (false when absent); nil when the bytes are not well-formed.
    static func allowed(_ bytes: UnsafeRawBufferPointer) -> Bool? {
        var allowed = false
        var reader = ProtoWireReader(bytes)
        while let (number, value) = reader.next() {
            if number == 1, let varint = value.varint { allowed = varint != 0 }
        }
        return reader.isMalformed ? nil : allowed
    }
}
