internal import CProto
internal import CProtobufC
import Glibc

/// `subscriptions.common.v1.HealthRequest`: asks a service how it is.
public struct HealthRequest: ProtoMessage, Equatable {
    public static let protoName = "subscriptions.common.v1.HealthRequest"

    public init() {}

    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) {
        var message = Subscriptions__Common__V1__HealthRequest()
        subscriptions__common__v1__health_request__init(&message)
        try ProtobufC.unpack(message.base.descriptor, Self.protoName, bytes) { _ in () }
    }

    public func serialized() -> [UInt8] {
        var message = Subscriptions__Common__V1__HealthRequest()
        subscriptions__common__v1__health_request__init(&message)
        return withUnsafePointer(to: &message) {
            $0.withMemoryRebound(to: ProtobufCMessage.self, capacity: 1, ProtobufC.pack)
        }
    }
}

/// Whether a service is serving.
public enum ServingStatus: UInt32, Sendable {
    case unspecified = 0
    case serving, notServing, draining

    public var name: String {
        switch self {
        case .unspecified: "UNSPECIFIED"
        case .serving: "SERVING"
        case .notServing: "NOT_SERVING"
        case .draining: "DRAINING"
        }
    }
}

/// `subscriptions.common.v1.HealthResponse`.
public struct HealthResponse: ProtoMessage, Equatable {
    public static let protoName = "subscriptions.common.v1.HealthResponse"

    public var status: ServingStatus
    public var service: String
    public var version: String
    public var uptimeMilliseconds: Int64
    public var serverTimeMilliseconds: Int64
    public var connections: UInt32

    public init(
        status: ServingStatus, service: String, version: String, uptimeMilliseconds: Int64,
        serverTimeMilliseconds: Int64, connections: UInt32
    ) {
        self.status = status
        self.service = service
        self.version = version
        self.uptimeMilliseconds = uptimeMilliseconds
        self.serverTimeMilliseconds = serverTimeMilliseconds
        self.connections = connections
    }

    public init(serialized bytes: UnsafeRawBufferPointer) throws(RPCError) {
        var empty = Subscriptions__Common__V1__HealthResponse()
        subscriptions__common__v1__health_response__init(&empty)
        self = try ProtobufC.unpack(empty.base.descriptor, Self.protoName, bytes) { raw in
            let m = UnsafeRawPointer(raw).assumingMemoryBound(to: Subscriptions__Common__V1__HealthResponse.self)
                .pointee
            return HealthResponse(
                status: ServingStatus(rawValue: m.status.rawValue) ?? .unspecified,
                service: String(cString: m.service), version: String(cString: m.version),
                uptimeMilliseconds: m.uptime_ms, serverTimeMilliseconds: m.server_time_ms,
                connections: m.connections)
        }
    }

    public func serialized() -> [UInt8] {
        var message = Subscriptions__Common__V1__HealthResponse()
        subscriptions__common__v1__health_response__init(&message)
        message.status = Subscriptions__Common__V1__ServingStatus(rawValue: status.rawValue)
        message.uptime_ms = uptimeMilliseconds
        message.server_time_ms = serverTimeMilliseconds
        message.connections = connections
        // The C strings live for the duration of the pack.
        return service.withCString { service in
            version.withCString { version in
                message.service = UnsafeMutablePointer(mutating: service)
                message.version = UnsafeMutablePointer(mutating: version)
                return withUnsafePointer(to: &message) {
                    $0.withMemoryRebound(to: ProtobufCMessage.self, capacity: 1, ProtobufC.pack)
                }
            }
        }
    }

}
