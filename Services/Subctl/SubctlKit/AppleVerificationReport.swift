public import AppStore
import Crypto
public import Foundation

/// What `apple verify` found in one JWS: its payload with the JWSs signed inside it decoded in
/// place, and a verdict for the JWS and for each of those. Made without I/O: the caller reads
/// the JWS and the anchors.
public struct AppleVerificationReport: Sendable, Equatable {
    /// The verdict on one JWS: where it sits, and why it was refused (nil when it verified).
    public struct Verdict: Sendable, Equatable {
        /// The kind for the outer JWS (`notification`), the member path for one inside it
        /// (`data.signedTransactionInfo`).
        public var path: String
        public var refusal: AppleVerificationError?

        public init(path: String, refusal: AppleVerificationError?) {
            self.path = path
            self.refusal = refusal
        }
    }

    /// The payload as indented JSON with sorted keys and the nested JWSs replaced by their
    /// decoded payloads (unverified decoding, for reading; the verdicts say what holds). Nil when
    /// the payload is not JSON.
    public var json: String?
    /// The outer JWS first, then each nested one in the order `nestedMembers` lists them.
    public var verdicts: [Verdict]

    public init(json: String?, verdicts: [Verdict]) {
        self.json = json
        self.verdicts = verdicts
    }

    /// The first refusal (the outer JWS before those inside), with its path; nil when all hold.
    public var refusal: (path: String, error: AppleVerificationError)? {
        for verdict in verdicts { if let error = verdict.refusal { return (verdict.path, error) } }
        return nil
    }

    /// The first refusal's message, behind its path when it is a nested JWS's; nil when valid.
    public var refusalMessage: String? {
        guard let (path, error) = refusal else { return nil }
        return path != verdicts.first?.path ? "\(path): \(error.message)" : error.message
    }

    /// What a nested JWS is.
    enum NestedKind: Sendable {
        case transaction, renewal, appTransaction
    }

    /// The members of a notification that hold JWSs, and what each is: under `data` (Apple's
    /// transaction and renewal info) and `appData` (the app transaction), wherever present.
    static let nestedMembers: [(container: String, member: String, kind: NestedKind)] = [
        ("data", "signedTransactionInfo", .transaction), ("data", "signedRenewalInfo", .renewal),
        ("data", "signedAppTransactionInfo", .appTransaction),
        ("appData", "signedTransactionInfo", .transaction), ("appData", "signedRenewalInfo", .renewal),
        ("appData", "signedAppTransactionInfo", .appTransaction),
    ]

    /// Verifies `jws` as `kind` (detected from its unverified payload when nil) and, for a
    /// notification, each JWS inside it, all with `verifier` at `now`.
    public static func make(
        jws: String, kind: AppleVerifyOptions.Kind?, verifier: AppleSignedDataVerifier, now: Date
    ) -> AppleVerificationReport {
        guard let payload = try? CompactJWS(jws).payload else {
            // Not a compact JWS: the verifier words the refusal.
            return AppleVerificationReport(
                json: nil,
                verdicts: [Verdict(path: kind?.rawValue ?? "payload", refusal: refusal(of: jws, verifier, now))])
        }
        var object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        guard let kind = kind ?? AppleVerifyOptions.Kind.detect(payload: payload) else {
            let error = AppleVerificationError(
                .malformed,
                "the payload has none of notificationType, transactionId, autoRenewStatus, renewalDate or "
                    + "originalTransactionId; name its kind with --kind")
            return AppleVerificationReport(
                json: object.flatMap(pretty), verdicts: [Verdict(path: "payload", refusal: error)])
        }
        var verdicts = [Verdict(path: kind.rawValue, refusal: refusal(of: jws, as: kind, verifier, now))]
        if kind == .notification, var notification = object {
            for (container, member, nestedKind) in nestedMembers {
                guard var inner = notification[container] as? [String: Any], let value = inner[member] else { continue }
                let path = "\(container).\(member)"
                guard let nested = value as? String else {
                    verdicts.append(Verdict(path: path, refusal: AppleVerificationError(.malformed, "not a string")))
                    continue
                }
                verdicts.append(Verdict(path: path, refusal: refusal(of: nested, as: nestedKind, verifier, now)))
                if let decoded = (try? CompactJWS(nested)).flatMap({
                    try? JSONSerialization.jsonObject(with: Data($0.payload))
                }) {
                    inner[member] = decoded
                    notification[container] = inner
                }
            }
            object = notification
        }
        return AppleVerificationReport(json: object.flatMap(pretty), verdicts: verdicts)
    }

    /// Why `verifier` refuses `jws` as `kind`, or nil.
    private static func refusal(
        of jws: String, as kind: AppleVerifyOptions.Kind, _ verifier: AppleSignedDataVerifier, _ now: Date
    ) -> AppleVerificationError? {
        do {
            switch kind {
            case .notification: _ = try verifier.verifyNotification(jws, now: now)
            case .transaction: _ = try verifier.verifyTransaction(jws, now: now)
            case .renewal: _ = try verifier.verifyRenewalInfo(jws, now: now)
            }
            return nil
        } catch {
            return error
        }
    }

    /// The refusal of a JWS of unknown kind: one that is not even a compact JWS.
    private static func refusal(of jws: String, _ verifier: AppleSignedDataVerifier, _ now: Date)
        -> AppleVerificationError?
    {
        do {
            _ = try verifier.verifySignature(jws, now: now)
            return nil
        } catch {
            return error
        }
    }

    /// Why `verifier` refuses a nested JWS of `kind`, or nil.
    private static func refusal(
        of jws: String, as kind: NestedKind, _ verifier: AppleSignedDataVerifier, _ now: Date
    ) -> AppleVerificationError? {
        switch kind {
        case .transaction: return refusal(of: jws, as: AppleVerifyOptions.Kind.transaction, verifier, now)
        case .renewal: return refusal(of: jws, as: AppleVerifyOptions.Kind.renewal, verifier, now)
        case .appTransaction:
            do {
                _ = try verifier.verifyAppTransaction(jws, now: now)
                return nil
            } catch {
                return error
            }
        }
    }

    /// Indented JSON with sorted keys and unescaped slashes.
    private static func pretty(_ object: [String: Any]) -> String? {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
