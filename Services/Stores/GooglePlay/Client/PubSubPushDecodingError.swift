/// Why a Pub/Sub push body, or the Real-time Developer Notification in its `data`, could not be
/// decoded. The message names the field at fault and never repeats a purchase token or `data`.
public struct PubSubPushDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem. None of them improves on redelivery; `unknownKind` alone may be a
    /// notification Google added after this code was written (record it, do not retry it).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Known: String, Sendable {
            case tooLarge, notJSON, missingField, invalidField, dataNotBase64, notANotification, unknownKind
        }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// The body is larger than the limit.
        public static let tooLarge = Code(.tooLarge)
        /// The body is not a JSON object.
        public static let notJSON = Code(.notJSON)
        /// A required member of the body is absent: `message`, `messageId`, `data`, `subscription`.
        public static let missingField = Code(.missingField)
        /// A member of the body has the wrong type, or its two spellings (`messageId` and
        /// `message_id`, `publishTime` and `publish_time`) differ.
        public static let invalidField = Code(.invalidField)
        /// `message.data` is not standard base64.
        public static let dataNotBase64 = Code(.dataNotBase64)
        /// `data` is not a developer notification: not JSON, a required field absent or of the
        /// wrong type, or more than one kind of notification.
        public static let notANotification = Code(.notANotification)
        /// `data` is a developer notification of none of the four known kinds.
        public static let unknownKind = Code(.unknownKind)

        /// The code in snake case, as logs and metrics print it.
        public var description: String {
            switch known {
            case .tooLarge: "too_large"
            case .notJSON: "not_json"
            case .missingField: "missing_field"
            case .invalidField: "invalid_field"
            case .dataNotBase64: "data_not_base64"
            case .notANotification: "not_a_notification"
            case .unknownKind: "unknown_kind"
            }
        }
    }

    /// What kind of problem this is.
    public let code: Code
    /// What was wrong, naming the field.
    public let message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
