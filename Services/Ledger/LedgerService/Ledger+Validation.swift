import Model
import Wire

/// The checks every request passes before anything is written.
extension Ledger {
    // A field's name is made only when its check fails (most names are built per request).
    static func check(_ value: String, _ field: @autoclosure () -> String, max: Int) throws {
        guard !value.isEmpty else { throw LedgerError.invalidArgument("\(field()) is missing") }
        try checkOptional(value, field(), max: max)
    }

    static func checkOptional(_ value: String, _ field: @autoclosure () -> String, max: Int) throws {
        guard value.utf8.count <= max else {
            throw LedgerError.invalidArgument("\(field()) is \(value.utf8.count) bytes; at most \(max) are allowed")
        }
    }

    /// `value` within `limit` (a field's bound as `proto/` states it): missing when empty and the
    /// limit's minimum is above 0, too long past its maximum. `field` names it in the message
    /// (the limit's own field name when nil).
    static func check(_ value: String, _ limit: FieldLimit, _ field: @autoclosure () -> String? = nil) throws {
        guard !value.isEmpty || limit.minimum == 0 else {
            throw LedgerError.invalidArgument("\(field() ?? limit.field) is missing")
        }
        try checkOptional(value, field() ?? limit.field, max: limit.maximum)
    }

    /// An optional field's value within `limit`, when it is set.
    static func check(_ value: String?, _ limit: FieldLimit, _ field: @autoclosure () -> String? = nil) throws {
        guard let value else { return }
        try check(value, limit, field())
    }

    static func check(_ key: SubscriptionKey, _ field: @autoclosure () -> String) throws {
        try check(key.storeID, SubscriptionKey.Limits.storeID, "\(field()).store_id")
    }

    /// A store's fact names a store: a grant is made by `GrantEntitlement` and moved by
    /// `MergeAccounts`, never recorded or linked as a store's subscription.
    static func checkSold(_ store: Store, _ field: String) throws {
        guard store != .promotional else {
            throw LedgerError.invalidArgument(
                "\(field) is STORE_PROMOTIONAL: grants are made with GrantEntitlement, not recorded as a store's fact")
        }
    }

    /// The first of `count` rows, read by `row` (a value and its size in bytes), that fit in
    /// `maxPageBytes`: at least one. A caller whose rows ran past the page's count continues
    /// after the last one it got.
    static func page<Value>(_ count: Int, _ row: (Int) throws -> (Value, Int)) throws -> [Value] {
        var values: [Value] = []
        var bytes = 0
        for index in 0..<count {
            let (value, size) = try row(index)
            bytes += size
            if !values.isEmpty && bytes > maxPageBytes { break }
            values.append(value)
        }
        return values
    }

    static func pageSize(_ requested: UInt32) throws -> UInt32 {
        if requested == 0 { return defaultPageSize }
        guard requested <= maxPageSize else {
            throw LedgerError.invalidArgument("page_size \(requested) is above the maximum of \(maxPageSize)")
        }
        return requested
    }

    static func check(_ periods: [Period]) throws {
        guard periods.count <= maxPeriods else {
            throw LedgerError.invalidArgument("at most \(maxPeriods) periods per request, got \(periods.count)")
        }
        for (index, period) in periods.enumerated() {
            let field = "periods[\(index)]"
            for (value, limit) in [
                (period.periodID, Period.Limits.periodID), (period.productID, Period.Limits.productID),
                (period.basePlanID ?? "", Period.Limits.basePlanID),
                (period.revocationReason ?? "", Period.Limits.revocationReason), (period.raw ?? "", Period.Limits.raw),
            ] {
                try check(value, limit, "\(field).\(limit.field)")
            }
            guard period.startMilliseconds > 0 else {
                throw LedgerError.invalidArgument("\(field).start_ms is missing: a period starts somewhere")
            }
            if let end = period.endMilliseconds, end < period.startMilliseconds {
                throw LedgerError.invalidArgument(
                    "\(field).end_ms \(end) is before its start_ms \(period.startMilliseconds)")
            }
        }
    }
}
