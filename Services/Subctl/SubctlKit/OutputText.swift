import Config
public import Sockets
import Wire

/// The text subctl prints, made from catalog entries and answers; no I/O.
public enum OutputText {
    /// Every method, one a line: `package.Service/Method  Request → Response`, with `stream`
    /// before the response of a server stream.
    public static func methods(_ catalog: MessageCatalog = .standard) -> String {
        let width = catalog.methods.map(\.fullName.count).max() ?? 0
        return catalog.methods.map { method in
            let name = method.fullName.padding(to: width)
            return "\(name)  \(method.inputType) → \(method.isServerStreaming ? "stream " : "")\(method.outputType)"
        }.joined(separator: "\n")
    }

    /// The fields of a message (number, JSON name, `repeated`, type), the values of an enum,
    /// or a method's signature with its request and response messages.
    ///
    /// Throws `notFound` when nothing has that name and `invalidArgument` when several things do.
    public static func describe(_ name: String, catalog: MessageCatalog = .standard) throws(SubctlError) -> String {
        let methods = name.contains("/") ? catalog.methods(matching: name) : catalog.methods.filter { $0.name == name }
        let messages = catalog.messages(matching: name)
        let enums = catalog.enums(matching: name)
        let found = methods.map(\.fullName) + messages.map(\.fullName) + enums.map(\.fullName)
        guard found.count <= 1 else {
            throw SubctlError(.invalidArgument, "\(name) is ambiguous: \(found.joined(separator: ", "))")
        }
        if let method = methods.first {
            let stream = method.isServerStreaming ? "stream " : ""
            let input = try describe(method.inputType, catalog: catalog)
            let output = try describe(method.outputType, catalog: catalog)
            return "rpc \(method.fullName)(\(method.inputType)) returns (\(stream)\(method.outputType))\n\n"
                + "\(input)\n\n\(output)"
        }
        if let message = messages.first {
            guard !message.fields.isEmpty else { return "message \(message.fullName) (no fields)" }
            let numberWidth = message.fields.map { String($0.number).count }.max()!
            let nameWidth = message.fields.map(\.jsonName.count).max()!
            let lines = message.fields.map { field in
                let number = String(repeating: " ", count: numberWidth - String(field.number).count) + "\(field.number)"
                let type = (field.isRepeated ? "repeated " : "") + field.typeName
                return "  \(number)  \(field.jsonName.padding(to: nameWidth))  \(type)"
            }
            return (["message \(message.fullName)"] + lines).joined(separator: "\n")
        }
        if let enumeration = enums.first {
            let width = enumeration.values.map { String($0.number).count }.max() ?? 0
            let lines = enumeration.values.map { value in
                "  " + String(repeating: " ", count: width - String(value.number).count)
                    + "\(value.number)  \(value.name)"
            }
            return (["enum \(enumeration.fullName)"] + lines).joined(separator: "\n")
        }
        throw SubctlError(.notFound, "no message, enum or method named \(name) (subctl methods lists the methods)")
    }

    /// `ledger SERVING version 0.1.0 uptime 12.3s connections 4 at 127.0.0.1:7002`, or with
    /// `json` the compact JSON of the HealthResponse. Throws `dataLoss` for undecodable bytes.
    public static func health(_ bytes: [UInt8], address: HostPort, json: Bool) throws(SubctlError) -> String {
        if json { return try JSONMessages.decodeToJSON(bytes, as: HealthResponse.protoName, pretty: false) }
        let response: HealthResponse
        do {
            response = try HealthResponse(serialized: bytes)
        } catch {
            throw SubctlError(.dataLoss, error.message)
        }
        let uptime = max(response.uptimeMilliseconds, 0)
        return
            "\(response.service) \((response.status?.description ?? "unspecified").uppercased()) version \(response.version) "
            + "uptime \(uptime / 1000).\(uptime % 1000 / 100)s connections \(response.connections) at \(address)"
    }

    /// An answer of `method` (one stream message for a stream): indented JSON, or one line with `json`.
    public static func response(_ bytes: [UInt8], of method: CatalogMethod, json: Bool) throws(SubctlError) -> String {
        try JSONMessages.decodeToJSON(bytes, as: method.outputType, pretty: !json)
    }

    /// `error: CODE: message`, for standard error.
    public static func error(_ error: SubctlError) -> String { "error: \(error)" }
}

extension String {
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
