extension String {
    /// The text as it may appear in an error message when it comes from a server: printable
    /// ASCII only (other characters dropped), surrounding spaces trimmed, at most `limit`
    /// characters.
    public func printableASCII(limit: Int = 200) -> String {
        let printable = unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }
        var text = Substring(String(String.UnicodeScalarView(printable)))
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return String(text.prefix(max(limit, 0)))
    }
}
