/// A piece of HTML that only this type builds: element and attribute names are string literals
/// of the code, and every text and attribute value is escaped (`& < > " '`), so nothing read from
/// a service or a request can become markup. The console's pages are made of these and nothing else.
public struct HTML: Sendable, Equatable {
    /// The markup, safe to send as it is.
    public private(set) var markup: String

    private init(markup: String) { self.markup = markup }

    /// Nothing.
    public static let empty = HTML(markup: "")

    /// `text`, escaped.
    public static func text(_ text: String) -> HTML { HTML(markup: escape(text)) }

    /// `<name attributes>children</name>`. An attribute whose value is nil is left out; an empty
    /// value makes a boolean attribute (`required`).
    public static func element(
        _ name: StaticString, _ attributes: KeyValuePairs<StaticString, String?> = [:], _ children: [HTML] = []
    ) -> HTML {
        HTML(markup: "<\(name)\(attributeMarkup(attributes))>" + children.map(\.markup).joined() + "</\(name)>")
    }

    /// `<name>children</name>`.
    public static func element(_ name: StaticString, _ children: [HTML]) -> HTML { element(name, [:], children) }

    /// `<name attributes>` with text content.
    public static func element(
        _ name: StaticString, _ attributes: KeyValuePairs<StaticString, String?> = [:], text: String
    ) -> HTML {
        element(name, attributes, [.text(text)])
    }

    /// A void element (`input`, `meta`, `link`, `br`): `<name attributes>` with no end tag.
    public static func void(_ name: StaticString, _ attributes: KeyValuePairs<StaticString, String?> = [:]) -> HTML {
        HTML(markup: "<\(name)\(attributeMarkup(attributes))>")
    }

    /// A whole document: the doctype, then `root`.
    public static func document(_ root: HTML) -> HTML { HTML(markup: "<!DOCTYPE html>\n" + root.markup) }

    /// The fragments one after another.
    public static func join(_ parts: [HTML]) -> HTML { HTML(markup: parts.map(\.markup).joined()) }

    /// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references: safe as element
    /// content and inside a quoted attribute value.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    private static func attributeMarkup(_ attributes: KeyValuePairs<StaticString, String?>) -> String {
        var out = ""
        for (name, value) in attributes {
            guard let value else { continue }
            out += value.isEmpty ? " \(name)" : " \(name)=\"\(escape(value))\""
        }
        return out
    }
}
