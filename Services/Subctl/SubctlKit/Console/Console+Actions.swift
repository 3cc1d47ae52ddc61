import HTTP
import Model
import Sockets
import Wire

/// The action forms, the confirmation page, and the confirmed call.
extension Console {
    /// A POST to `/action/NAME`: without `confirm=yes` the confirmation page; with it, the call,
    /// then a redirect (303) to the page the form came from (or, after a restore, to the account
    /// it went to), which shows the outcome. A missing
    /// reason or a bad field is refused before any call.
    func perform(_ action: ConsoleAction, _ form: FormFields, session: String) async -> HTTPResponse {
        let returnTo = Self.localPath(form["return"])
        guard let reason = form["reason"]?.trimmed, !reason.isEmpty else {
            return refusedAction("a reason is required: nothing was done", returnTo: returnTo, session: session)
        }
        let prepared: ConsoleAction.Prepared
        do throws(SubctlError) {
            prepared = try action.prepare(form, reason: reason)
        } catch {
            return refusedAction("\(error.message): nothing was done", returnTo: returnTo, session: session)
        }
        guard form["confirm"] == "yes" else {
            return confirmation(action, form, prepared, returnTo: returnTo, session: session)
        }
        do throws(SubctlError) {
            sessions.keep(.result(try await prepared.perform(self)), for: session)
        } catch {
            sessions.keep(.error("\(action.label) failed: \(Self.describe(error))"), for: session)
            return HTTPResponse(status: 303, headers: [("Location", returnTo)])
        }
        return HTTPResponse(status: 303, headers: [("Location", prepared.shownAt ?? returnTo)])
    }

    private func refusedAction(_ message: String, returnTo: String, session: String) -> HTTPResponse {
        page(
            "Refused", session: session,
            [
                .element("h1", text: "Nothing was done"), Self.alert(message),
                .element("p", [.element("a", ["href": returnTo], text: "Back")]),
            ], status: 400)
    }

    private func confirmation(
        _ action: ConsoleAction, _ form: FormFields, _ prepared: ConsoleAction.Prepared, returnTo: String,
        session: String
    ) -> HTTPResponse {
        let fields = form.pairs.filter { $0.name != "confirm" && $0.name != "csrf" } + prepared.added
        let hidden: [HTML] =
            fields.map { Self.hidden($0.name, $0.value) } + [
                Self.hidden("csrf", sessions.csrfToken(for: session)), Self.hidden("confirm", "yes"),
            ]
        return page(
            "Confirm", session: session,
            [
                .element(
                    "section", ["id": "confirm", "aria-labelledby": "confirm-heading"],
                    [
                        .element("h1", ["id": "confirm-heading"], text: "Confirm: \(action.label)"),
                        .element("p", ["id": "confirm-summary"], text: prepared.summary),
                        .element("p", text: "Reason: \(form["reason"] ?? "")"),
                        .element(
                            "form",
                            ["id": "confirm-form", "method": "post", "action": "/action/\(action.rawValue)"],
                            hidden + [
                                .element("button", ["id": "confirm-button", "type": "submit"], text: "Confirm"),
                                .text(" "),
                                .element("a", ["href": returnTo], text: "Cancel"),
                            ]),
                    ])
            ])
    }

    /// A page of this console to go back to: `path` when it is one (starts with one `/`), else `/`.
    static func localPath(_ path: String?) -> String {
        guard let path, path.hasPrefix("/"), !path.hasPrefix("//"), !path.hasPrefix("/\\"),
            !path.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == "\\" })
        else { return "/" }
        return path
    }

    static func hidden(_ name: String, _ value: String) -> HTML {
        .void("input", ["type": "hidden", "name": name, "value": value])
    }

    /// A form posting `action`: the context as hidden fields, the CSRF token, the page to come
    /// back to, `inputs`, a required reason, and the button; folded under its name (a native
    /// disclosure, opened by keyboard or pointer) so that a row of actions stays one line.
    func actionForm(
        _ action: ConsoleAction, csrf: String, returnTo: String, hidden: KeyValuePairs<String, String>, inputs: [HTML]
    ) -> HTML {
        var children: [HTML] = [Self.hidden("csrf", csrf), Self.hidden("return", returnTo)]
        children += hidden.map { Self.hidden($0.key, $0.value) }
        children += inputs
        children.append(
            .element(
                "label",
                [.text("Reason (kept in the audit trail) "), .element("textarea", ["name": "reason", "required": ""])]))
        children.append(.element("button", ["type": "submit"], text: action.label))
        let form = HTML.element(
            "form",
            [
                "class": "action", "data-action": action.rawValue, "method": "post",
                "action": "/action/\(action.rawValue)",
            ], children)
        return .element("details", ["class": "action"], [.element("summary", text: action.label + "…"), form])
    }

    /// A labelled input.
    static func input(_ label: String, _ attributes: KeyValuePairs<StaticString, String?>) -> HTML {
        .element("label", [.text(label + " "), .void("input", attributes)])
    }

    /// A labelled choice of `options` (value, text): required, unless an option is empty (none).
    static func select(_ label: String, name: String, _ options: [(value: String, text: String)]) -> HTML {
        let optional = options.contains { $0.value.isEmpty }
        return .element(
            "label",
            [
                .text(label + " "),
                .element(
                    "select", ["name": name, "required": optional ? nil : ""],
                    options.map { .element("option", ["value": $0.value], text: $0.text) }),
            ])
    }

    /// The forms of a subscription's row, by store.
    func actionForms(_ subscription: Subscription, _ csrf: String, _ returnTo: String) -> [HTML] {
        let key = subscription.key
        switch key.store {
        case .promotional:
            return [.text("see Support grants")]
        case .apple:
            let latest = subscription.latestOrderID ?? key.storeID
            return [
                actionForm(.refresh, csrf: csrf, returnTo: returnTo, hidden: ["key": key.description], inputs: []),
                actionForm(
                    .extendRenewal, csrf: csrf, returnTo: returnTo,
                    hidden: [
                        "original_transaction_id": key.storeID, "environment": key.environment.description,
                        "request_id": ConsoleAction.uuid(),
                    ],
                    inputs: [
                        Self.input(
                            "Days (1–90)", ["name": "days", "type": "number", "min": "1", "max": "90", "required": ""]),
                        Self.select(
                            "Apple reason code", name: "reason_code",
                            ConsoleAction.reasonCodes.enumerated().map {
                                (String($0.offset), "\($0.offset) \($0.element)")
                            }),
                    ]),
                actionForm(
                    .consumption, csrf: csrf, returnTo: returnTo, hidden: ["environment": key.environment.description],
                    inputs: [
                        Self.input("Transaction id", ["name": "transaction_id", "value": latest, "required": ""]),
                        Self.input(
                            "The customer consented",
                            ["name": "consented", "type": "checkbox", "value": "yes", "required": ""]),
                        Self.select("Delivery", name: "delivery", ConsoleAction.deliveryStatuses.map { ($0, $0) }),
                        Self.input("A sample was provided", ["name": "sample", "type": "checkbox", "value": "yes"]),
                        Self.select(
                            "Refund preference", name: "refund_preference",
                            ConsoleAction.refundPreferences.map { ($0, $0.isEmpty ? "none" : $0) }),
                    ]),
            ]
        case .google:
            let context: KeyValuePairs<String, String> = [
                "package": subscription.bundleOrPackage, "token": key.storeID,
            ]
            return [
                actionForm(.refresh, csrf: csrf, returnTo: returnTo, hidden: ["key": key.description], inputs: []),
                actionForm(
                    .refundGoogleOrder, csrf: csrf, returnTo: returnTo, hidden: context,
                    inputs: [
                        Self.input(
                            "Order id", ["name": "order_id", "value": subscription.latestOrderID, "required": ""]),
                        Self.input("Also end access now", ["name": "revoke", "type": "checkbox", "value": "yes"]),
                    ]),
                actionForm(
                    .revokeGoogle, csrf: csrf, returnTo: returnTo, hidden: context,
                    inputs: [
                        Self.select("Refund", name: "refund", [("prorated", "prorated"), ("full", "full")])
                    ]),
            ]
        }
    }

    /// Runs a `subctl` command with the console's deadline and returns what it would print, a
    /// line after another.
    func run(_ body: (CommandRunner, CallOptions) async throws(SubctlError) -> Void) async throws(SubctlError)
        -> String
    {
        let printed = PrintedLines()
        let runner = CommandRunner(write: { printed.lines.append($0) })
        try await body(runner, CallOptions(address: HostPort(host: "console", port: 0), timeout: services.timeout))
        return printed.lines.joined(separator: "; ")
    }
}

extension Console {
    /// The form that restores a purchase no account holds to the customer's account (none for
    /// the read-only role, or for a grant).
    func restoreForm(_ subscription: Subscription, csrf: String, returnTo: String) -> HTML? {
        guard !readOnly, subscription.key.store != .promotional else { return nil }
        return actionForm(
            .restore, csrf: csrf, returnTo: returnTo,
            hidden: [
                "key": subscription.key.description, "package": subscription.bundleOrPackage,
                "product": subscription.productID,
            ],
            inputs: [Console.input("The customer's account id", ["name": "account", "required": ""])])
    }
}

extension ConsoleAction {
    /// The inputs of a grant.
    static let grantInputs: [HTML] = [
        Console.input("Capability", ["name": "capability", "required": ""]),
        Console.input("Days", ["name": "days", "type": "number", "min": "1", "max": "3650", "required": ""]),
    ]
}

/// What a command printed, for the console to show.
private final class PrintedLines {
    var lines: [String] = []
}
