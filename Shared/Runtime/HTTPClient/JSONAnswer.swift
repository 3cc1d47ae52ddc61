public import Foundation

/// Decodes the JSON bodies of successful answers, naming what is missing or mistyped, never a
/// value (bodies may hold tokens).
public enum JSONAnswer {
    /// Why a body is not what was expected, as the end of a sentence: `has no lineItems[0].productId`,
    /// `has a expiryTime of the wrong type`, `has a null kind`, `is not a JSON object`.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String

        /// A problem described by `description`.
        public init(_ description: String) { self.description = description }
    }

    /// `body` decoded as `T` with a default `JSONDecoder`. Throws `Problem` when it cannot be.
    public static func decode<T: Decodable>(_ type: T.Type, from body: Data) throws(Problem) -> T {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.reduce(into: "") { path, key in
                if let index = key.intValue {
                    path += "[\(index)]"
                } else {
                    path += (path.isEmpty ? "" : ".") + key.stringValue
                }
            }
        }
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch let DecodingError.keyNotFound(key, context) {
            let parent = path(context)
            throw Problem("has no \(parent.isEmpty ? "" : parent + ".")\(key.stringValue)")
        } catch let DecodingError.typeMismatch(_, context) {
            throw Problem("has a \(path(context)) of the wrong type")
        } catch let DecodingError.valueNotFound(_, context) {
            throw Problem("has a null \(path(context))")
        } catch {
            throw Problem("is not a JSON object")
        }
    }
}
