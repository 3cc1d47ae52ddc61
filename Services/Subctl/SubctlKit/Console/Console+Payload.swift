import AppStore
import Crypto
import Foundation
import HTTP
import Model
import Wire

/// `/payload?account=A&position=P&index=N`: the raw store data an event of the account's audit
/// trail kept (the N-th event recorded at feed position P), decoded and, for the App Store,
/// verified again here against `--apple-root` (as `subctl apple verify`). Operators only: the
/// read-only role gets 403 (and the services clear raw data for it anyway).
extension Console {
    /// How many history pages are read looking for the event.
    static let payloadSearchPages = 20

    func payload(_ query: [String: String], session: String) async -> HTTPResponse {
        guard !readOnly else {
            return errorPage(
                "Payload", "refused: the read-only role may not read raw store data", session: session, status: 403)
        }
        guard let account = query["account"], !account.isEmpty, let position = query["position"].flatMap(UInt64.init),
            let index = query["index"].flatMap(Int.init), index >= 0
        else {
            return errorPage(
                "Payload", "the address names no event (account, position, index)", session: session, status: 400)
        }
        let event: LifecycleEvent
        do throws(SubctlError) {
            guard let found = try await historyEvent(account: account, position: position, index: index) else {
                return errorPage(
                    "Payload", "no event \(index) at position \(position) in \(account)'s history", session: session,
                    status: 404)
            }
            event = found
        } catch {
            return errorPage("Payload", Self.describe(error), session: session, status: 502)
        }
        var content: [HTML] = [
            .element("h1", text: "Payload"),
            .element(
                "p",
                [
                    .text(
                        "\(event.kind?.description ?? "event") of \(event.key) at \(Self.time(event.storeTimeMilliseconds)), "
                    ),
                    .element("a", ["href": Self.accountPath(account)], text: "back to \(account)"),
                ]),
        ]
        let raw = [event.rawPayload, event.rawTransaction, event.rawRenewalInfo].compactMap { $0 }.filter {
            !$0.isEmpty
        }
        guard let first = raw.first else {
            return page("Payload", session: session, content + [.element("p", text: "The event kept no raw data.")])
        }
        let decoded: String
        let verification: (verified: Bool, text: String)
        switch event.key.store {
        case .apple:
            let report = appleReport(first)
            decoded = raw.dropFirst().reduce(report.json ?? first) { text, nested in
                text + "\n\n" + (appleReport(nested).json ?? nested)
            }
            verification = appleVerdict(report)
        case .google:
            decoded = raw.map(Self.decodeGoogle).joined(separator: "\n\n")
            verification = (
                false,
                "Not verified here: Google Play pushes are authenticated when they arrive (the Pub/Sub push's OIDC "
                    + "token, checked by the verifier), and the ledger keeps no record of that check with the event."
            )
        case .promotional:
            decoded = raw.joined(separator: "\n\n")
            verification = (false, "A grant has no store signature.")
        }
        content.append(
            .element(
                "p", ["id": "verification", "class": verification.verified ? "verified" : "failed", "role": "status"],
                text: verification.text))
        content.append(.element("pre", ["id": "decoded"], text: decoded))
        return page("Payload", session: session, content)
    }

    /// The event of the account's history at `position`, the `index`-th recorded there.
    private func historyEvent(account: String, position: UInt64, index: Int) async throws(SubctlError)
        -> LifecycleEvent?
    {
        var request = GetHistoryRequest(accountID: account, pageSize: 500)
        for _ in 0..<Self.payloadSearchPages {
            let page = try await call(
                services.ledger, LedgerCommand.history(.account(account), pageSize: 0, all: false).method, request,
                as: GetHistoryResponse.self)
            let here = page.events.filter { $0.position == position }
            if here.count > index { return here[index] }
            // Newest first: once past the position, it is not further on.
            if let last = page.events.last?.position, last < position { return nil }
            guard let token = page.nextPageToken, !token.isEmpty else { return nil }
            request.pageToken = token
        }
        return nil
    }

    /// `subctl apple verify`'s report on a JWS, made with the configured roots and the claims the
    /// payload itself states (bundle, environment, app id): what is checked here is the chain to
    /// a root and the ES256 signature.
    private func appleReport(_ jws: String) -> AppleVerificationReport {
        let claims = Self.appleClaims(jws)
        let configuration = AppleSignedDataVerifier.Configuration(
            bundleID: claims.bundleID, environment: claims.environment, appAppleID: claims.appAppleID)
        guard let verifier = try? AppleSignedDataVerifier(anchors: appleAnchors, configuration: configuration) else {
            return AppleVerificationReport(json: nil, verdicts: [])
        }
        return AppleVerificationReport.make(
            jws: jws, kind: nil, verifier: verifier, now: Date(timeIntervalSince1970: Double(now()) / 1000))
    }

    private func appleVerdict(_ report: AppleVerificationReport) -> (verified: Bool, text: String) {
        guard !appleAnchors.isEmpty else {
            return (false, "Not verified: no App Store root was given (subctl console --apple-root PEM).")
        }
        guard !report.verdicts.isEmpty else { return (false, "Not verified: the roots cannot be used.") }
        if let message = report.refusalMessage {
            return (false, "Verification failed: \(message)")
        }
        let parts = report.verdicts.map(\.path).joined(separator: ", ")
        return (
            true, "Verified now: \(parts) signed (ES256) by a certificate that chains to a configured App Store root."
        )
    }

    /// The bundle id, environment and app id an App Store payload states (or, in a notification,
    /// its `data` states), unverified: to verify the signature against them.
    static func appleClaims(_ jws: String) -> (bundleID: String, environment: AppleEnvironment, appAppleID: Int64?) {
        var object =
            (try? CompactJWS(jws)).flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any]
            } ?? [:]
        if let data = object["data"] as? [String: Any] { object = data }
        let environment = (object["environment"] as? String).flatMap(AppleEnvironment.init(rawValue:)) ?? .production
        let appAppleID = (object["appAppleId"] as? Int).map { Int64($0) }
        return ((object["bundleId"] as? String) ?? "", environment, appAppleID)
    }

    /// A Google Play payload for reading: a Pub/Sub push with its `message.data` base64-decoded
    /// in place, indented; other JSON indented; anything else as it is.
    static func decodeGoogle(_ raw: String) -> String {
        guard var object = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any] else { return raw }
        if var message = object["message"] as? [String: Any], let data = message["data"] as? String,
            let bytes = Data(base64Encoded: data)
        {
            message["data"] = (try? JSONSerialization.jsonObject(with: bytes)) ?? String(decoding: bytes, as: UTF8.self)
            object["message"] = message
        }
        guard
            let text = try? JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return raw }
        return String(decoding: text, as: UTF8.self)
    }
}
