import COpenSSL

/// An error from the Crypto module: what failed, followed by the text of any OpenSSL errors
/// queued on the calling thread. The message never contains key material or input PEM/DER.
public struct CryptoError: Error, CustomStringConvertible {
    /// What failed, with OpenSSL's reasons appended when it gave any.
    public let message: String

    /// Creates an error with a message of your own (no OpenSSL text is added).
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }

    /// Drains this thread's OpenSSL error queue into an error about `operation`.
    static func openSSL(_ operation: String) -> CryptoError {
        var reasons: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        var code = ERR_get_error()
        while code != 0 {
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(cBuffer: buffer))
            code = ERR_get_error()
        }
        return CryptoError(message: reasons.isEmpty ? operation : "\(operation): \(reasons.joined(separator: "; "))")
    }
}
