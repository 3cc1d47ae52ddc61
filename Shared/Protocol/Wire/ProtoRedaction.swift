/// How the generated `redacted()` shows a field marked `@redact store-id` to a caller with the
/// read-only role: enough of a store identifier to tell two apart in a conversation with the
/// customer, not enough to act on it at the store.
public enum ProtoRedaction {
    /// `…` (U+2026) and the last 4 characters of `value`; `…` alone for 4 characters or fewer; an
    /// empty value stays empty (it names nothing).
    public static func storeID(_ value: String) -> String {
        if value.isEmpty { return "" }
        return value.count <= 4 ? "…" : "…" + value.suffix(4)
    }
}
