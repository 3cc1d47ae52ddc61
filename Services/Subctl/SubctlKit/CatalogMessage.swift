/// One protobuf message: its full name and fields.
public struct CatalogMessage: Sendable, Hashable {
    /// One field of a message.
    public struct Field: Sendable, Hashable {
        /// What a field's type is.
        public enum Kind: Sendable, Hashable {
            case scalar, enumeration, message
        }

        /// The proto name, e.g. `store_id`.
        public let name: String
        /// The proto3 JSON name, e.g. `storeId`.
        public let jsonName: String
        public let number: Int
        /// A scalar keyword (`string`, `int64`, …) or the full name of a message or enum.
        public let typeName: String
        public let kind: Kind
        public let isRepeated: Bool

        public init(name: String, jsonName: String, number: Int, typeName: String, kind: Kind, isRepeated: Bool) {
            self.name = name
            self.jsonName = jsonName
            self.number = number
            self.typeName = typeName
            self.kind = kind
            self.isRepeated = isRepeated
        }
    }

    /// `package.Message`.
    public let fullName: String
    /// In field-number order.
    public let fields: [Field]

    public init(fullName: String, fields: [Field]) {
        self.fullName = fullName
        self.fields = fields
    }
}
