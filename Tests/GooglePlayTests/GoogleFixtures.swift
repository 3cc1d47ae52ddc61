import Foundation
import Testing

/// The real Google Play data under `../shared/fixtures/google` (beside the checkout), when present.
enum GoogleFixtures {
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/google")

    static var available: Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("subscriptionsv2").path)
    }

    static let skipMessage = "../shared/fixtures/google is absent: real Google Play data not checked"

    static func data(_ path: String) throws -> Data { try Data(contentsOf: directory.appendingPathComponent(path)) }
}
