import Crypto
import Foundation
public import HTTP
import Synchronization
public import Wire

/// The API keys HTTP callers may present (`Authorization: Bearer KEY`), read from a file of
/// `IDENTITY SHA256-HEX` lines: the identity a key stands for (what the access policy's rules
/// name) and the SHA-256 of the key in hex, so that the file holds no key. `#` starts a
/// comment; blank lines are skipped. `reload` replaces the keys only when the whole file is
/// good. Nothing about a presented key is ever logged or put in an answer.
public final class APIKeyStore: Sendable {
    /// A key file that cannot be used, with the line that is wrong.
    public struct FileError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let path: String
    /// Identity by the hex SHA-256 of its key.
    private let identities: Mutex<[String: String]>

    /// Reads the keys in `path`; throws naming the file and the line for a file that is not usable.
    public init(path: String) throws(FileError) {
        self.path = path
        identities = Mutex(try Self.read(path))
    }

    /// How many keys are in force.
    public var count: Int { identities.withLock { $0.count } }

    /// Reads the file again; the keys in force change only when it is good. Returns their count.
    @discardableResult
    public func reload() throws(FileError) -> Int {
        let fresh = try Self.read(path)
        identities.withLock { $0 = fresh }
        return fresh.count
    }

    /// The identity of the key in `authorization` (an `Authorization` header's value), or
    /// UNAUTHENTICATED saying what is missing or wrong (never the key).
    public func identity(authorization: String?) -> Result<String, RPCError> {
        guard let authorization, !authorization.isEmpty else {
            return .failure(RPCError(.unauthenticated, "an API key is required: Authorization: Bearer KEY"))
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .failure(RPCError(.unauthenticated, "the Authorization header must be Bearer KEY"))
        }
        let digest = Digest.sha256Hex(Array(parts[1].trimmingCharacters(in: .whitespaces).utf8))
        guard let identity = identities.withLock({ $0[digest] }) else {
            return .failure(RPCError(.unauthenticated, "the API key is not valid"))
        }
        return .success(identity)
    }

    /// The identities for `request`'s key, for `ConnectGateway`'s `identify`.
    public func identify(_ request: HTTPRequest) -> Result<[String]?, RPCError> {
        identity(authorization: request.headers["authorization"]).map { [$0] }
    }

    static func read(_ path: String) throws(FileError) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileError(description: "\(path): cannot be read")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw FileError(description: "\(path): is not UTF-8")
        }
        return try parse(text, path: path)
    }

    static func parse(_ text: String, path: String) throws(FileError) -> [String: String] {
        var identities: [String: String] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard !words.isEmpty else { continue }
            let at = "\(path) line \(index + 1)"
            guard words.count == 2 else {
                throw FileError(description: "\(at): expected IDENTITY SHA256-HEX, got \(words.count) words")
            }
            let hex = words[1].lowercased()
            guard hex.utf8.count == 64,
                hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
            else {
                throw FileError(description: "\(at): the key's SHA-256 must be 64 hex digits")
            }
            if let earlier = identities[hex] {
                throw FileError(description: "\(at): the same key is already listed for \(earlier)")
            }
            identities[hex] = String(words[0])
        }
        return identities
    }
}
