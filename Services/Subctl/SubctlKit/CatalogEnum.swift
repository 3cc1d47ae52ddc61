/// One protobuf enum: its full name and values.
public struct CatalogEnum: Sendable, Hashable {
    /// One named value.
    public struct Value: Sendable, Hashable {
        public let name: String
        public let number: Int

        public init(name: String, number: Int) {
            self.name = name
            self.number = number
        }
    }

    /// `package.Enum`.
    public let fullName: String
    /// In the order the .proto file declares them.
    public let values: [Value]

    public init(fullName: String, values: [Value]) {
        self.fullName = fullName
        self.values = values
    }
}
