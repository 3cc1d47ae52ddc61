/// A statement parameter or a column value.
public enum SQLiteValue: Sendable, Hashable {
    case integer(Int64)
    case text(String)
    case blob([UInt8])
    case null
}
