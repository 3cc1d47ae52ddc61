import ProtoJSON
import Wire

/// `ProtoJSON`'s conversions with their refusals as subctl's codes: a request that does not fit
/// its message exits with 2 (`INVALID_ARGUMENT`, `NOT_FOUND`), an answer that is not its
/// message with 1 (`DATA_LOSS`).
enum JSONMessages {
    static func encode(json: String, as messageFullName: String) throws(SubctlError) -> [UInt8] {
        do { return try ProtoJSON.encode(json: json, as: messageFullName) } catch { throw Self.error(error) }
    }

    static func decodeToJSON(_ bytes: [UInt8], as messageFullName: String, pretty: Bool) throws(SubctlError) -> String {
        do { return try ProtoJSON.decodeToJSON(bytes, as: messageFullName, pretty: pretty) } catch {
            throw Self.error(error)
        }
    }

    private static func error(_ error: RPCError) -> SubctlError {
        switch error.code {
        case .invalidArgument: SubctlError(.invalidArgument, error.message)
        case .notFound: SubctlError(.notFound, error.message)
        case .dataLoss: SubctlError(.dataLoss, error.message)
        default: SubctlError(.rpc(error.code), error.message)
        }
    }
}
