import TestSupport
import Testing
import Wire

@testable import EntitlementService

/// `CheckAccessWire.read`, the one reader of `CheckAccessRequest` in the service, against the
/// generated decoder (protobuf-c and its decode budget): the same fields for the bytes both
/// accept, the same status for the bytes both refuse, over hand-made and seeded random bytes.
@Suite("CheckAccess request reader")
struct CheckAccessWireTests {
    /// The fields read, or the status a caller gets.
    typealias Answer = Result<[String], RPCError>

    static func read(_ bytes: [UInt8], _ budget: DecodeBudget) -> Answer {
        bytes.withUnsafeBytes { raw in
            do throws(EntitlementError) {
                let request = try CheckAccessWire.read(raw, budget: budget)
                // The prefetch's reading names the same account.
                #expect(CheckAccessWire.accountID(in: raw).map(Array.init) == Array(request.accountID))
                return .success([
                    String(decoding: request.accountID, as: UTF8.self),
                    String(decoding: request.capability, as: UTF8.self), "\(request.atMilliseconds ?? 0)",
                ])
            } catch {
                return .failure(error.rpcError)
            }
        }
    }

    static func decoded(_ bytes: [UInt8], _ budget: DecodeBudget) -> Answer {
        DecodeBudget.$current.withValue(budget) {
            do throws(RPCError) {
                let request = try CheckAccessRequest(serialized: bytes)
                return .success([request.accountID, request.capability, "\(request.atMilliseconds ?? 0)"])
            } catch {
                return .failure(error)
            }
        }
    }

    static let budgets = [
        DecodeBudget.standard, DecodeBudget(maxUnknownFields: 0), DecodeBudget(maxUnknownFields: 2),
        DecodeBudget(maxFields: 2), DecodeBudget(maxDepth: -1),
    ]

    static func expectSame(_ bytes: [UInt8], budgets: [DecodeBudget] = budgets) {
        for budget in budgets {
            #expect(read(bytes, budget) == decoded(bytes, budget), "\(bytes) \(budget)")
        }
    }

    static let valid: [[UInt8]] = [
        CheckAccessRequest(accountID: "7a1c2f0e-3b7d-4d7c-9a57-1b2c3d4e5f60", capability: "pro").serialized(),
        CheckAccessRequest(accountID: "érin", capability: "pro", atMilliseconds: 1_700_000_000_000).serialized(),
        CheckAccessRequest(accountID: "a", capability: "b", atMilliseconds: -1).serialized(),
        CheckAccessRequest(accountID: String(repeating: "x", count: 300), capability: "pro").serialized(),
        CheckAccessRequest().serialized(),
    ]

    @Test("hand-made bytes: what protobuf-c accepts and refuses, the reader does, with the same status")
    func handMade() {
        let cases: [[UInt8]] = [
            [],
            // Strings with a NUL: both end them there.
            [0x0A, 0x03, 0x61, 0x00, 0x62, 0x12, 0x01, 0x70],
            // Not UTF-8, in either string.
            [0x0A, 0x02, 0xFF, 0xFE, 0x12, 0x03, 0x70, 0x72, 0x6F],
            [0x0A, 0x01, 0x61, 0x12, 0x02, 0xC3, 0x28],
            // A field given twice: the last stands.
            [0x0A, 0x01, 0x61, 0x0A, 0x01, 0x62, 0x18, 0x05, 0x18, 0x07],
            // Known fields of the wrong wire type.
            [0x08, 0x01], [0x1A, 0x00], [0x19, 0, 0, 0, 0, 0, 0, 0, 0], [0x15, 0, 0, 0, 0],
            // Unknown fields of every wire type, and groups (refused).
            [0x20, 0x01, 0x29, 1, 2, 3, 4, 5, 6, 7, 8, 0x32, 0x01, 0x00, 0x3D, 1, 2, 3, 4],
            [0x23, 0x24], [0x0E],
            // Keys: overlong but within 5 bytes, 6 bytes, no tag bits, tag 0 behind a continuation.
            [0x8A, 0x80, 0x80, 0x80, 0x00, 0x01, 0x61], [0x8A, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 0x61],
            [0x02, 0x00], [0x80, 0x00, 0x01], [0x80],
            // Lengths: overlong within 5 bytes, 6 bytes, past the end, past 2^31.
            [0x0A, 0x81, 0x80, 0x80, 0x80, 0x00, 0x61], [0x0A, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 0x61],
            [0x0A, 0x09, 0x41], [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
            // Varints: 10 bytes, 11 bytes, truncated.
            [0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            [0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], [0x18, 0x80],
            // Fixed-width fields cut short.
            [0x21, 1, 2, 3], [0x25, 1, 2],
        ]
        for bytes in cases + Self.valid { Self.expectSame(bytes) }
        // More unknown fields than the standard budget allows, before and after a fault.
        let unknown = [UInt8](repeating: 0, count: 65).flatMap { _ in [0x20 as UInt8, 0x01] }
        Self.expectSame(unknown)
        Self.expectSame(unknown + [0x0A, 0x09])
        Self.expectSame([0x0A, 0x09] + unknown)
    }

    @Test("seeded random bytes and mutations of valid requests: the reader answers as protobuf-c does")
    func seeded() {
        var random = SeededGenerator(seed: SeededGenerator.seed(default: 0x5EED))
        let pieces: [[UInt8]] = [
            [0x0A, 0x01, 0x61], [0x12, 0x03, 0x70, 0x72, 0x6F], [0x18, 0x01], [0x00], [0x80], [0xFF], [0x0A],
            [0x20, 0x01], [0x22, 0x00], [0x1A, 0x00], [0x08, 0x01], [0xC3, 0x28], [0x0A, 0x02, 0xC3, 0xA9],
        ]
        for round in 0..<3000 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0:
                bytes = (0..<Int(random.next() % 24)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case 1:
                bytes = (0..<Int(random.next() % 6)).flatMap { _ in pieces[Int(random.next() % UInt64(pieces.count))] }
            default:
                bytes = Self.valid[Int(random.next() % UInt64(Self.valid.count))]
                for _ in 0..<(1 + Int(random.next() % 3)) where !bytes.isEmpty {
                    let at = Int(random.next() % UInt64(bytes.count))
                    switch random.next() % 3 {
                    case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                    case 1: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
                    default: bytes.remove(at: at)
                    }
                }
            }
            Self.expectSame(bytes, budgets: [Self.budgets[round % Self.budgets.count]])
        }
    }

    @Test("each error of the service's layers maps to its wire status in one place")
    func statuses() {
        let cases: [(EntitlementError.Code, StatusCode)] = [
            (.badRequest, .invalidArgument), (.overBudget, .resourceExhausted), (.unknownCapability, .notFound),
            (.noPolicyFile, .failedPrecondition), (.policyRefused, .failedPrecondition),
        ]
        for (code, status) in cases {
            #expect(EntitlementError(code, "m").rpcError == RPCError(status, "m"))
        }
        let views: [(ViewError.Code, StatusCode)] = [
            (.malformed, .invalidArgument), (.overBudget, .resourceExhausted), (.feedMismatch, .failedPrecondition),
            (.feedEnded, .unavailable),
        ]
        for (code, status) in views {
            #expect(ViewError(code, "m").rpcError == RPCError(status, "m"))
        }
    }
}
