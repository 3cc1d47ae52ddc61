import HTTP

/// The frame every page shares, and the pieces pages are made of.
extension Console {
    /// A whole page: the header naming the operator and role, the navigation, and `content` in
    /// `<main>`, after the outcome of the session's last action when one waits to be shown.
    func page(_ title: String, session: String?, _ content: [HTML], status: Int = 200) -> HTTPResponse {
        var shown: [HTML] = []
        switch session.flatMap(sessions.takeOutcome(for:)) {
        case .result(let text)?: shown.append(.element("p", ["id": "result", "role": "status"], text: text))
        case .error(let text)?: shown.append(.element("p", ["id": "error", "role": "alert"], text: text))
        case nil: break
        }
        let document = HTML.document(
            .element(
                "html", ["lang": "en"],
                [
                    .element(
                        "head",
                        [
                            .void("meta", ["charset": "utf-8"]),
                            .void("meta", ["name": "viewport", "content": "width=device-width, initial-scale=1"]),
                            .element("title", text: "\(title) · subscriptions console"),
                            .void("link", ["rel": "stylesheet", "href": ConsoleAssets.stylesheetPath]),
                            .element("script", ["src": ConsoleAssets.scriptPath, "defer": ""]),
                        ]),
                    .element(
                        "body",
                        [
                            .element("a", ["class": "skip", "href": "#main"], text: "Skip to content"),
                            // Who the console acts as, and where to go, only for a session.
                            .element(
                                "header",
                                [.element("span", ["class": "brand"], text: "Subscriptions console")]
                                    + (session == nil
                                        ? []
                                        : [
                                            .element(
                                                "span", ["id": "whoami"],
                                                text: "\(identity) · \(readOnly ? "read-only" : "operator")"),
                                            .element(
                                                "nav", ["aria-label": "Main"],
                                                [
                                                    .element("a", ["href": "/"], text: "Find"),
                                                    .element("a", ["href": "/queues"], text: "Work queues"),
                                                ]),
                                        ])),
                            .element("main", ["id": "main"], shown + content),
                        ]),
                ]))
        return ConsoleResponse.html(document, status: status)
    }

    /// A page that shows one error (a service's, or a request's).
    func errorPage(_ title: String, _ message: String, session: String?, status: Int) -> HTTPResponse {
        page(title, session: session, [.element("h1", text: title), Self.alert(message)], status: status)
    }

    /// `<p id="error" role="alert">`: the page's error.
    static func alert(_ message: String) -> HTML { .element("p", ["id": "error", "role": "alert"], text: message) }

    /// `<p class="error" role="alert">`: why one section of a page is missing.
    static func sectionAlert(_ message: String) -> HTML {
        .element("p", ["class": "error", "role": "alert"], text: message)
    }

    /// A table with a caption, column headers, and `rows` (each a `<tr>` made by the caller).
    static func table(_ id: String, caption: String, headers: [String], rows: [HTML]) -> HTML {
        .element(
            "table", ["id": id],
            [
                .element("caption", text: caption),
                .element("thead", [.element("tr", headers.map { .element("th", ["scope": "col"], text: $0) })]),
                .element("tbody", rows),
            ])
    }

    /// A section with a heading; `id` is the section's.
    static func section(_ id: String, _ heading: String, _ content: [HTML]) -> HTML {
        .element(
            "section", ["id": id, "aria-labelledby": "\(id)-heading"],
            [.element("h2", ["id": "\(id)-heading"], text: heading)] + content)
    }

    /// `<td>` with text.
    static func cell(_ text: String, class name: String? = nil) -> HTML { .element("td", ["class": name], text: text) }

    /// An instant as the pages show it: `2026-01-31T12:00:00Z`, `-` for none.
    static func time(_ milliseconds: Int64?) -> String { OutputText.time(milliseconds) }

    /// A service's error as a page says it: `NOT_FOUND: message`.
    static func describe(_ error: SubctlError) -> String { error.description }
}
