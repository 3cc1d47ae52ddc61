internal import CProto
internal import CProtobufC
import Glibc
public import Model

/// CheckAccess on a server's hot path without Swift values in between: the request's fields as
/// the bytes protobuf-c unpacked them into, and the response packed by protobuf-c from C strings
/// the caller lends, appended to an output buffer. The bytes are those of `CheckAccessRequest`
/// and `CheckAccessResponse` (the same messages, the same encoder).
public enum CheckAccessWire {
    /// A request's fields, valid only inside `withRequest`'s body.
    public struct Request {
        public let accountID: UnsafeBufferPointer<UInt8>
        public let capability: UnsafeBufferPointer<UInt8>
        /// The instant asked about; nil for now.
        public let atMilliseconds: Int64?
    }

    /// Unpacks `bytes` as a `CheckAccessRequest` and calls `body` with its fields. Throws
    /// `RPCError(.invalidArgument)` when protobuf-c refuses the bytes or a string is not UTF-8,
    /// as `CheckAccessRequest(serialized:)` does, and whatever `body` throws. Not generic, so
    /// that a caller in another module runs it with no type metadata looked up per call.
    public static func withRequest(_ bytes: UnsafeRawBufferPointer, _ body: (Request) throws -> Void) throws {
        var defaults = Subscriptions__Entitlement__V1__CheckAccessRequest()
        subscriptions__entitlement__v1__check_access_request__init(&defaults)
        let name = CheckAccessRequest.protoName
        var failure: (any Error)?
        try ProtobufC.unpack(defaults.base.descriptor, name, bytes) { message in
            let request = UnsafeRawPointer(message).assumingMemoryBound(
                to: Subscriptions__Entitlement__V1__CheckAccessRequest.self
            ).pointee
            guard let account = utf8(request.account_id), let capability = utf8(request.capability) else {
                let field = utf8(request.account_id) == nil ? "account_id" : "capability"
                failure = RPCError(.invalidArgument, "payload is not a valid \(name): \(field) is not valid UTF-8")
                return
            }
            do {
                try body(
                    Request(
                        accountID: account, capability: capability,
                        atMilliseconds: request.at_ms == 0 ? nil : request.at_ms))
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// The bytes of a C string, or nil when they are not UTF-8.
    private static func utf8(_ text: UnsafePointer<CChar>?) -> UnsafeBufferPointer<UInt8>? {
        guard let text else { return UnsafeBufferPointer(start: nil, count: 0) }
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: strlen(text))
        if bytes.allSatisfy({ $0 < 0x80 }) { return bytes }
        return String(validating: bytes, as: UTF8.self) == nil ? nil : bytes
    }

    /// A grant's fields, the strings as NUL-terminated UTF-8 the caller keeps alive during
    /// `appendResponse`.
    public struct Grant {
        public var store: Store
        public var environment: StoreEnvironment
        public var storeID: UnsafePointer<CChar>
        public var productID: UnsafePointer<CChar>
        public var basePlanID: UnsafePointer<CChar>?
        public var state: SubscriptionState?
        public var untilMilliseconds: Int64?

        public init(
            store: Store, environment: StoreEnvironment, storeID: UnsafePointer<CChar>,
            productID: UnsafePointer<CChar>, basePlanID: UnsafePointer<CChar>?, state: SubscriptionState?,
            untilMilliseconds: Int64?
        ) {
            self.store = store
            self.environment = environment
            self.storeID = storeID
            self.productID = productID
            self.basePlanID = basePlanID
            self.state = state
            self.untilMilliseconds = untilMilliseconds
        }
    }

    /// Packs a `CheckAccessResponse` onto the end of `output`: the bytes
    /// `CheckAccessResponse(...).serialized()` gives for the same fields (an empty string is
    /// left out, as there).
    public static func appendResponse(
        to output: inout [UInt8], allowed: Bool, untilMilliseconds: Int64?, reason: AccessReason?, grant: Grant?,
        detail: UnsafePointer<CChar>?
    ) {
        var response = Subscriptions__Entitlement__V1__CheckAccessResponse()
        subscriptions__entitlement__v1__check_access_response__init(&response)
        response.allowed = allowed ? 1 : 0
        response.until_ms = untilMilliseconds ?? 0
        response.reason = .init(rawValue: ProtoField.number(reason))
        if let detail, detail.pointee != 0 { response.detail = UnsafeMutablePointer(mutating: detail) }
        guard let grant else { return ProtobufC.pack(&response, onto: &output) }
        var key = Subscriptions__Common__V1__SubscriptionKey()
        subscriptions__common__v1__subscription_key__init(&key)
        key.store = .init(rawValue: ProtoField.number(grant.store))
        key.environment = .init(rawValue: ProtoField.number(grant.environment))
        if grant.storeID.pointee != 0 { key.store_id = UnsafeMutablePointer(mutating: grant.storeID) }
        var cGrant = Subscriptions__Entitlement__V1__AccessGrant()
        subscriptions__entitlement__v1__access_grant__init(&cGrant)
        if grant.productID.pointee != 0 { cGrant.product_id = UnsafeMutablePointer(mutating: grant.productID) }
        if let plan = grant.basePlanID, plan.pointee != 0 { cGrant.base_plan_id = UnsafeMutablePointer(mutating: plan) }
        cGrant.state = .init(rawValue: ProtoField.number(grant.state))
        cGrant.until_ms = grant.untilMilliseconds ?? 0
        withUnsafeMutablePointer(to: &key) { key in
            cGrant.key = key
            withUnsafeMutablePointer(to: &cGrant) { cGrant in
                response.grant = cGrant
                ProtobufC.pack(&response, onto: &output)
            }
        }
    }
}
