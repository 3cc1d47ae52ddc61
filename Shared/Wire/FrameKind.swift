/// What one envelope is (see proto/subscriptions/rpc/v1/envelope.proto).
public enum FrameKind: UInt32, Sendable {
    case unspecified = 0
    case request = 1
    case response = 2
    case streamMessage = 3
    case streamEnd = 4
    case cancel = 5
    case windowUpdate = 6
}
