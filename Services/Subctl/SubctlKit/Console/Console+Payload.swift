import AppStore
import Crypto
import Foundation
import GooglePlay
import HTTP
import Model
import Wire

/// `/payload?account=A[&key=STORE/ENV/ID]&position=P&index=N`: the raw store data an event of the
/// account's audit trail kept (the N-th event recorded at feed position P in the account's history,
/// or in the subscription's when `key` names where the event was read), each JWS's protected
/// header above its payload, decoded and verified again: for the
/// App Store against `--apple-root` (as `subctl apple verify`); for Google Play, the push's
/// authentication as the verifier recorded it. Operators only: the
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
        var key: SubscriptionKey?
        if let text = query["key"] {
            do throws(SubctlError) {
                key = try SubctlCommand.subscriptionKey(text)
            } catch {
                return errorPage(
                    "Payload", "key must be STORE/ENV/STORE_ID, got “\(text)”", session: session, status: 400)
            }
        }
        let event: LifecycleEvent
        do throws(SubctlError) {
            guard let found = try await historyEvent(account: account, key: key, position: position, index: index)
            else {
                return errorPage(
                    "Payload",
                    "no event \(index) at position \(position) in \(key.map { "\($0)" } ?? account)'s history",
                    session: session, status: 404)
            }
            event = found
        } catch {
            return errorPage("Payload", Self.describe(error), session: session, status: 502)
        }
        var content: [HTML] = [
            .element("h1", text: "Payload"),
            .element(
                "p",
                text:
                    "\(event.kind?.description ?? "event") of \(event.key) at \(Self.time(event.storeTimeMilliseconds))."
            ),
            .element("p", [.element("a", ["href": Self.accountPath(account)], text: "back to \(account)")]),
        ]
        let raw: [(label: String?, text: String)] = [
            (nil, event.rawPayload), ("signedTransactionInfo", event.rawTransaction),
            ("signedRenewalInfo", event.rawRenewalInfo),
        ].compactMap { label, text in text.flatMap { $0.isEmpty ? nil : (label, $0) } }
        guard let first = raw.first else {
            return page("Payload", session: session, content + [.element("p", text: "The event kept no raw data.")])
        }
        let blocks: [PayloadBlock]
        let verification: (verified: Bool, text: String)
        switch event.key.store {
        case .apple:
            blocks = Self.appleBlocks(raw)
            verification = appleVerdict(appleReport(first.text))
        case .google:
            blocks = raw.map { PayloadBlock(text: Self.decodeGoogle($0.text)) }
            verification = await googleVerdict(event)
        case .promotional:
            blocks = raw.map { PayloadBlock(text: $0.text) }
            verification = (false, "A grant has no store signature.")
        }
        content.append(
            .element(
                "p", ["id": "verification", "class": verification.verified ? "verified" : "failed", "role": "status"],
                text: verification.text))
        content.append(.element("div", ["id": "decoded"], blocks.map(\.html)))
        return page("Payload", session: session, content)
    }

    /// One piece of raw store data for reading: what it is (`notification`, `signedTransactionInfo`),
    /// a JWS's protected header in a line, and the data decoded.
    struct PayloadBlock: Equatable {
        var label: String?
        var header: String?
        var text: String

        var html: HTML {
            var parts: [HTML] = []
            if let label { parts.append(.element("h2", text: label)) }
            if let header { parts.append(.element("p", ["class": "jws-header"], text: "Protected header: \(header)")) }
            parts.append(.element("pre", text: text))
            return .element("section", ["class": "raw", "data-label": label], parts)
        }
    }

    /// An App Store event's raw data as blocks: each JWS with its header and its payload as
    /// indented JSON; a notification's nested JWSs (`signedTransactionInfo`, `signedRenewalInfo`,
    /// …) each a block of its own after it, named in the notification by what they are; raw
    /// data the notification already holds is not shown twice. `raw` is labelled by field, nil
    /// for the event's payload (then named by its kind).
    static func appleBlocks(_ raw: [(label: String?, text: String)]) -> [PayloadBlock] {
        var blocks: [PayloadBlock] = []
        var shown: Set<String> = []
        for (label, text) in raw where !shown.contains(text) {
            shown.insert(text)
            guard let jws = try? CompactJWS(text) else {
                blocks.append(PayloadBlock(label: label, text: text))
                continue
            }
            let name = label ?? AppleVerifyOptions.Kind.detect(payload: jws.payload)?.rawValue ?? "payload"
            guard var object = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any] else {
                blocks.append(
                    PayloadBlock(
                        label: name, header: jwsHeader(jws), text: String(decoding: jws.payload, as: UTF8.self)))
                continue
            }
            var nested: [PayloadBlock] = []
            for (container, member, _) in AppleVerificationReport.nestedMembers {
                guard var inner = object[container] as? [String: Any], let value = inner[member] as? String,
                    let inside = try? CompactJWS(value)
                else { continue }
                let path = container == "data" ? member : "\(container).\(member)"
                let payload = (try? JSONSerialization.jsonObject(with: Data(inside.payload))).flatMap(prettyJSON)
                nested.append(
                    PayloadBlock(
                        label: path, header: jwsHeader(inside),
                        text: payload ?? String(decoding: inside.payload, as: UTF8.self)))
                shown.insert(value)
                inner[member] = "(a JWS: \(path), below)"
                object[container] = inner
            }
            blocks.append(PayloadBlock(label: name, header: jwsHeader(jws), text: prettyJSON(object) ?? text))
            blocks += nested
        }
        return blocks
    }

    /// A JWS's protected header in a line, members sorted: `alg ES256, x5c 3 certificates` (a
    /// certificate chain counted, not shown); nil when the header is not a JSON object.
    static func jwsHeader(_ jws: CompactJWS) -> String? {
        guard let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any] else {
            return nil
        }
        return header.keys.sorted().map { name in
            switch header[name] {
            case let chain as [Any] where name == "x5c":
                return "x5c \(chain.count) certificate\(chain.count == 1 ? "" : "s")"
            case let text as String:
                return "\(name) \(text)"
            case let value?:
                return "\(name) \(prettyJSON(value) ?? String(describing: value))"
            case nil:
                return name
            }
        }.joined(separator: ", ")
    }

    /// The event at `position`, the `index`-th recorded there, in the history of `key` when given,
    /// else of the account.
    private func historyEvent(account: String, key: SubscriptionKey?, position: UInt64, index: Int)
        async throws(SubctlError) -> LifecycleEvent?
    {
        var request =
            key.map { GetHistoryRequest(key: $0, pageSize: 500) }
            ?? GetHistoryRequest(accountID: account, pageSize: 500)
        let subject: LedgerCommand.HistorySubject = key.map { .key($0) } ?? .account(account)
        for _ in 0..<Self.payloadSearchPages {
            let page = try await call(
                services.ledger, LedgerCommand.history(subject, pageSize: 0, all: false).method, request,
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

    /// A Google Play event's authentication: Play signs nothing a reader could verify later, so
    /// what is shown is the push's authentication as the verifier checked and recorded it on
    /// arrival (its inbox entry's `push_authentication`, found through the event's trace), held
    /// to what a valid Pub/Sub push token is: Google's issuer, a service account, an audience, a
    /// key, and a check made while the token was valid. An event read from the Play Developer API
    /// (a verification, a refresh) came over TLS from Google and has no push to show.
    private func googleVerdict(_ event: LifecycleEvent) async -> (verified: Bool, text: String) {
        guard let notification = event.notificationID, !notification.isEmpty else {
            return (
                false,
                "Not a push: read from the Play Developer API by the verifier over TLS at "
                    + "\(Self.time(event.verifiedTimeMilliseconds)); Play signs no answer that could be verified again."
            )
        }
        guard let trace = event.traceID, !trace.isEmpty else {
            return (false, "Not verified: the event has no trace id to find the push \(notification) it came from.")
        }
        let entries: [InboxEntry]
        do throws(SubctlError) {
            entries = try await call(
                services.ledger, LedgerCommand.trace(traceID: trace).method, FindTraceRequest(traceID: trace),
                as: FindTraceResponse.self
            ).inboxEntries
        } catch {
            return (false, "Not verified: the ledger did not answer FindTrace: \(Self.describe(error))")
        }
        guard let entry = entries.first(where: { $0.notificationID == notification }) else {
            return (false, "Not verified: no inbox entry \(notification) under trace \(trace).")
        }
        guard let push = entry.pushAuthentication else {
            return (false, "Not verified: the inbox entry \(notification) records no push authentication.")
        }
        var problems: [String] = []
        if !PubSubPushAuthenticator.issuers.contains(push.iss) {
            problems.append("issuer \"\(push.iss)\" is not Google's")
        }
        if push.email.isEmpty { problems.append("no service account") }
        if push.aud.isEmpty { problems.append("no audience") }
        if push.kid.isEmpty { problems.append("no key id") }
        if let checked = push.checkedTimeMilliseconds, let issued = push.iatMilliseconds,
            let expires = push.expMilliseconds
        {
            // The verifier's clock may be off by its skew either way.
            let skew = PubSubPushAuthenticator.Configuration.defaultClockSkew.components.seconds * 1000
            if checked < issued - skew || checked > expires + skew {
                problems.append("checked at \(Self.time(checked)), outside the token's validity")
            }
        } else {
            problems.append("no issue, expiry or check time")
        }
        guard problems.isEmpty else {
            return (
                false,
                "Verification failed: the recorded push authentication has " + problems.joined(separator: ", ") + "."
            )
        }
        return (
            true,
            "Verified on arrival, as recorded: the push \(notification) carried a Pub/Sub token of \(push.email), "
                + "issued by \(push.iss) for \(push.aud), signed with Google's key \(push.kid), valid "
                + "\(Self.time(push.iatMilliseconds)) to \(Self.time(push.expMilliseconds)), checked by the verifier at "
                + "\(Self.time(push.checkedTimeMilliseconds))."
        )
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
        return prettyJSON(object) ?? raw
    }

    /// JSON indented, keys sorted, slashes unescaped; nil when `value` is not serializable.
    static func prettyJSON(_ value: Any) -> String? {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: value,
                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
