import Foundation
import Testing

/// The real App Store data under `../shared/fixtures/apple` (beside the checkout), when present.
enum AppleFixtures {
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple")

    static var available: Bool { FileManager.default.fileExists(atPath: directory.appendingPathComponent("jws").path) }

    static let skipMessage = "../shared/fixtures/apple is absent: real App Store payloads not checked"

    static let bundleID = "com.loki-project.loki-messenger"
    static let appAppleID: Int64 = 1_470_168_868

    /// One payload with what its name or line says it is.
    struct Payload: Sendable, CustomTestStringConvertible {
        enum Kind: String, Sendable { case notification, transaction, renewalInfo }
        let name: String
        let kind: Kind
        let notificationType: String?
        let subtype: String?
        let jws: String
        var testDescription: String { name }
    }

    static func rootDER() throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent("certs/AppleRootCA-G3.cer")))
    }

    /// The single `.jws` files, named TYPE[_SUBTYPE]_sandbox_DATE.jws (notifications),
    /// auto-renewable_* (transactions) and autoRenewStatus1_* (renewal info).
    static func files() -> [Payload] {
        guard available else { return [] }
        let folder = directory.appendingPathComponent("jws")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".jws") }.sorted().compactMap { name in
            guard let text = try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8) else {
                return nil
            }
            let jws = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if name.hasPrefix("auto-renewable_") {
                return Payload(name: name, kind: .transaction, notificationType: nil, subtype: nil, jws: jws)
            }
            if name.hasPrefix("autoRenewStatus") {
                return Payload(name: name, kind: .renewalInfo, notificationType: nil, subtype: nil, jws: jws)
            }
            let stem = name.components(separatedBy: "_sandbox_")[0]
            let (type, subtype) = split(stem)
            return Payload(name: name, kind: .notification, notificationType: type, subtype: subtype, jws: jws)
        }
    }

    /// Every line of sandbox-lifecycle-42.jsonl.
    static func lines() -> [Payload] {
        guard available,
            let text = try? String(
                contentsOf: directory.appendingPathComponent("jws/sandbox-lifecycle-42.jsonl"), encoding: .utf8)
        else { return [] }
        return text.split(separator: "\n").enumerated().compactMap { index, line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let kind = (object["kind"] as? String).flatMap(Payload.Kind.init(rawValue:)),
                let jws = object["jws"] as? String
            else { return nil }
            return Payload(
                name: "line \(index + 1) (\(kind.rawValue) \(object["notificationType"] as? String ?? ""))", kind: kind,
                notificationType: object["notificationType"] as? String, subtype: object["subtype"] as? String, jws: jws
            )
        }
    }

    /// "DID_CHANGE_RENEWAL_PREF_UPGRADE" → type and subtype, by the longest known type prefix.
    private static func split(_ stem: String) -> (String, String?) {
        let types = [
            "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "CONSUMPTION_REQUEST", "SUBSCRIBED", "DID_RENEW",
            "EXPIRED", "REFUND", "TEST",
        ]
        for type in types where stem.hasPrefix(type) {
            let rest = stem.dropFirst(type.count)
            return (type, rest.isEmpty ? nil : String(rest.dropFirst()))
        }
        return (stem, nil)
    }
}
