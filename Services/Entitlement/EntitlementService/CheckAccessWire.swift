internal import CProto
import Glibc
import Model
import Wire

/// CheckAccess on the service's hot path without Swift values in between: the request read in
/// place from its bytes (the one reader of `CheckAccessRequest` the service has: the framed
/// method, its prefetch, the Connect gateway's calls and each check of a batch go through it),
/// and the response packed by protobuf-c from C strings the caller lends, appended to an output
/// buffer. The bytes are those of `CheckAccessRequest` and `CheckAccessResponse` (the same
/// messages, the same encoder).
enum CheckAccessWire {
    /// A request's fields as views of the request's bytes, valid while they are. The strings are
    /// UTF-8 and end before the first NUL, as protobuf-c's C strings of them do.
    struct Request {
        let accountID: UnsafeBufferPointer<UInt8>
        let capability: UnsafeBufferPointer<UInt8>
        /// The instant asked about; nil for now.
        let atMilliseconds: Int64?
        /// The feed position the answer must come from at least (`min_position`); nil for any.
        let minPosition: UInt64?
    }

    /// Reads `bytes` as a `CheckAccessRequest`, in place, with the answer protobuf-c and
    /// `CheckAccessRequest(serialized:)` give for the same bytes: first the decode budget in
    /// force, held on the wire bytes (`overBudget`); then the bytes as protobuf-c 1.4 scans and
    /// parses them (`scan`), else `badRequest` naming the first fault; then each string must be
    /// UTF-8 (`badRequest`).
    static func read(_ bytes: UnsafeRawBufferPointer, budget: DecodeBudget = .current) throws(EntitlementError)
        -> Request
    {
        guard let fields = scan(bytes) else { throw fault(bytes, budget) }
        if fields.known > budget.maxFields || fields.unknown > budget.maxUnknownFields || budget.maxDepth < 0 {
            try checkBudget(bytes, budget)
        }
        guard let accountID = utf8(bytes, fields.account) else { throw notUTF8("account_id") }
        guard let capability = utf8(bytes, fields.capability) else { throw notUTF8("capability") }
        return Request(
            accountID: accountID, capability: capability,
            atMilliseconds: fields.at == 0 ? nil : Int64(bitPattern: fields.at),
            minPosition: fields.minPosition == 0 ? nil : fields.minPosition)
    }

    /// The account id of a request `read` may accept, up to its first NUL, without the checks
    /// that decide nothing here (budget, UTF-8): for a prefetch, which only warms the cache for
    /// the account; nil for bytes `read` refuses as protobuf-c does.
    static func accountID(in bytes: UnsafeRawBufferPointer) -> UnsafeBufferPointer<UInt8>? {
        guard let fields = scan(bytes) else { return nil }
        return text(bytes, fields.account)
    }

    /// Where a request's fields lie in its bytes, and how many fields of each kind it has.
    private struct Fields {
        var account: (start: Int, count: Int) = (0, 0)
        var capability: (start: Int, count: Int) = (0, 0)
        var at: UInt64 = 0
        var minPosition: UInt64 = 0
        var known = 0
        var unknown = 0
    }

    /// The fields of `bytes` as protobuf-c 1.4 scans and parses them: keys of at most 5 bytes,
    /// lengths of at most 5 and below 2^31, varints of at most 10, each known field of its own
    /// wire type, unknown fields skipped, the last of a field standing; nil where it refuses them.
    @inline(__always)
    private static func scan(_ bytes: UnsafeRawBufferPointer) -> Fields? {
        var fields = Fields()
        let count = bytes.count
        var offset = 0
        while offset < count {
            guard let (tag, wireType, keyBytes) = key(bytes, at: offset) else { return nil }
            offset += keyBytes
            let left = count - offset
            // Where the value's contents start, and the bytes it takes in all.
            var contents = offset
            let length: Int
            switch wireType {
            case 0:
                let most = min(left, 10)
                var index = 0
                while index < most, bytes[offset + index] & 0x80 != 0 { index += 1 }
                guard index < most else { return nil }
                length = index + 1
            case 1, 5:
                length = wireType == 1 ? 8 : 4
                guard left >= length else { return nil }
            case 2:
                let most = min(left, 5)
                var value = 0
                var index = 0
                while index < most {
                    let byte = bytes[offset + index]
                    value |= Int(byte & 0x7F) << (7 * index)
                    if byte & 0x80 == 0 { break }
                    index += 1
                }
                guard index < most, value <= Int(Int32.max), index + 1 + value <= left else { return nil }
                contents = offset + index + 1
                length = index + 1 + value
            default:
                return nil
            }
            switch tag {
            case 1, 2:
                guard wireType == 2 else { return nil }
                fields.known += 1
                let text = (contents, offset + length - contents)
                if tag == 1 { fields.account = text } else { fields.capability = text }
            case 3, 4:
                guard wireType == 0 else { return nil }
                fields.known += 1
                var value: UInt64 = 0
                for index in 0..<length { value |= UInt64(bytes[offset + index] & 0x7F) << (7 * UInt64(index)) }
                if tag == 3 { fields.at = value } else { fields.minPosition = value }
            default:
                fields.unknown += 1
            }
            offset += length
        }
        return fields
    }

    /// The field key at `offset` as protobuf-c reads it: the tag, the wire type and the bytes the
    /// key takes; nil where protobuf-c stops (a first byte without tag bits, more than 5 bytes).
    @inline(__always)
    private static func key(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (UInt32, UInt8, Int)? {
        let first = bytes[offset]
        guard first & 0xF8 != 0 else { return nil }
        var tag = UInt32((first & 0x7F) >> 3)
        guard first & 0x80 != 0 else { return (tag, first & 7, 1) }
        let most = min(bytes.count - offset, 5)
        var shift: UInt32 = 4
        var used = 1
        while used < most {
            let byte = bytes[offset + used]
            used += 1
            tag |= UInt32(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return (tag, first & 7, used) }
            shift += 7
        }
        return nil
    }

    /// The text at `range`, up to its first NUL (protobuf-c's C string of it ends there).
    @inline(__always)
    private static func text(_ bytes: UnsafeRawBufferPointer, _ range: (start: Int, count: Int))
        -> UnsafeBufferPointer<UInt8>
    {
        guard range.count > 0, let base = bytes.baseAddress else { return UnsafeBufferPointer(start: nil, count: 0) }
        let start = (base + range.start).assumingMemoryBound(to: UInt8.self)
        let count = memchr(start, 0, range.count).map { UnsafeRawPointer(start).distance(to: $0) } ?? range.count
        return UnsafeBufferPointer(start: start, count: count)
    }

    /// `text`, or nil when it is not UTF-8.
    @inline(__always)
    private static func utf8(_ bytes: UnsafeRawBufferPointer, _ range: (start: Int, count: Int))
        -> UnsafeBufferPointer<UInt8>?
    {
        let text = text(bytes, range)
        if text.allSatisfy({ $0 < 0x80 }) { return text }
        return String(validating: text, as: UTF8.self) == nil ? nil : text
    }

    private static func notUTF8(_ field: String) -> EntitlementError {
        EntitlementError(
            .badRequest, "payload is not a valid \(CheckAccessRequest.protoName): \(field) is not valid UTF-8")
    }

    /// Why bytes protobuf-c refuses are refused: the decode budget's fault when the bytes pass
    /// it (it is held first), else where the bytes stop being protobuf.
    private static func fault(_ bytes: UnsafeRawBufferPointer, _ budget: DecodeBudget) -> EntitlementError {
        do { try checkBudget(bytes, budget) } catch { return error }
        let reason = ProtoWireReader.firstProblem(in: bytes) ?? "a field has a value of the wrong type"
        return EntitlementError(.badRequest, "payload is not a valid \(CheckAccessRequest.protoName): \(reason)")
    }

    /// Throws `overBudget` as `DecodeBudget` does for a `CheckAccessRequest` past `budget`: its
    /// walk of the wire bytes (stopping, silent, where they stop being well-formed) counts the
    /// fields of numbers 1 to 4 and the others.
    private static func checkBudget(_ bytes: UnsafeRawBufferPointer, _ budget: DecodeBudget) throws(EntitlementError) {
        let name = CheckAccessRequest.protoName
        guard budget.maxDepth >= 0 else {
            throw EntitlementError(.overBudget, "\(name) is nested more than \(budget.maxDepth) messages deep")
        }
        var fields = 0
        var unknown = 0
        var reader = ProtoWireReader(bytes)
        while let (number, _) = reader.next() {
            guard number <= UInt64(UInt32.max) else { continue }
            if (1...4).contains(number) {
                fields += 1
                guard fields <= budget.maxFields else {
                    throw EntitlementError(.overBudget, "\(name): more than \(budget.maxFields) fields in all")
                }
            } else {
                unknown += 1
                guard unknown <= budget.maxUnknownFields else {
                    throw EntitlementError(
                        .overBudget, "\(name): more than \(budget.maxUnknownFields) fields this schema does not know")
                }
            }
        }
    }

    /// A grant's fields, the strings as NUL-terminated UTF-8 the caller keeps alive during
    /// `appendResponse`.
    struct Grant {
        var store: Store
        var environment: StoreEnvironment
        var storeID: UnsafePointer<CChar>
        var productID: UnsafePointer<CChar>
        var basePlanID: UnsafePointer<CChar>?
        var state: SubscriptionState?
        var untilMilliseconds: Int64?
    }

    /// The wire number of an enum value, 0 for nil (specialized here: a generic call into
    /// another module would look up the enum's type at run time on every answer).
    @inline(__always)
    private static func wireNumber<E: RawRepresentable>(_ value: E?) -> UInt32 where E.RawValue == Int32 {
        UInt32(bitPattern: value?.rawValue ?? 0)
    }

    /// Packs a `CheckAccessResponse` onto the end of `output`: the bytes
    /// `CheckAccessResponse(...).serialized()` gives for the same fields (an empty string is
    /// left out, as there).
    static func appendResponse(
        to output: inout [UInt8], allowed: Bool, untilMilliseconds: Int64?, reason: AccessReason?, grant: Grant?,
        detail: UnsafePointer<CChar>?
    ) {
        var response = Subscriptions__Entitlement__V1__CheckAccessResponse()
        subscriptions__entitlement__v1__check_access_response__init(&response)
        response.allowed = allowed ? 1 : 0
        response.until_ms = untilMilliseconds ?? 0
        response.reason = .init(rawValue: wireNumber(reason))
        if let detail, detail.pointee != 0 { response.detail = UnsafeMutablePointer(mutating: detail) }
        guard let grant else { return withUnsafePointer(to: &response) { ProtobufC.pack(message: $0, onto: &output) } }
        var key = Subscriptions__Common__V1__SubscriptionKey()
        subscriptions__common__v1__subscription_key__init(&key)
        key.store = .init(rawValue: wireNumber(grant.store))
        key.environment = .init(rawValue: wireNumber(grant.environment))
        if grant.storeID.pointee != 0 { key.store_id = UnsafeMutablePointer(mutating: grant.storeID) }
        var cGrant = Subscriptions__Entitlement__V1__AccessGrant()
        subscriptions__entitlement__v1__access_grant__init(&cGrant)
        if grant.productID.pointee != 0 { cGrant.product_id = UnsafeMutablePointer(mutating: grant.productID) }
        if let plan = grant.basePlanID, plan.pointee != 0 { cGrant.base_plan_id = UnsafeMutablePointer(mutating: plan) }
        cGrant.state = .init(rawValue: wireNumber(grant.state))
        cGrant.until_ms = grant.untilMilliseconds ?? 0
        withUnsafeMutablePointer(to: &key) { key in
            cGrant.key = key
            withUnsafeMutablePointer(to: &cGrant) { cGrant in
                response.grant = cGrant
                withUnsafePointer(to: &response) { ProtobufC.pack(message: $0, onto: &output) }
            }
        }
    }
}
