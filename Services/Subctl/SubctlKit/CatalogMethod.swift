/// One RPC method of a service, as subctl calls it.
public struct CatalogMethod: Sendable, Hashable {
    /// `package.Service/Method`, the name the wire carries.
    public let fullName: String
    /// `package.Service`.
    public let serviceFullName: String
    /// `Service`.
    public let serviceName: String
    /// `Method`.
    public let name: String
    /// Full name of the request message.
    public let inputType: String
    /// Full name of the response message (of each stream message for a server stream).
    public let outputType: String
    /// True when the server answers with a stream of `outputType` messages.
    public let isServerStreaming: Bool

    public init(
        serviceFullName: String, serviceName: String, name: String, inputType: String, outputType: String,
        isServerStreaming: Bool
    ) {
        self.fullName = "\(serviceFullName)/\(name)"
        self.serviceFullName = serviceFullName
        self.serviceName = serviceName
        self.name = name
        self.inputType = inputType
        self.outputType = outputType
        self.isServerStreaming = isServerStreaming
    }
}
