import Model

/// What a timeline reads of one subscription besides the access decision: where its answers
/// may change, and which verified fact holds an instant.
extension HoldingAccess {
    /// A period or status interval that holds an instant.
    struct TimelineFact: Equatable {
        var start: Int64
        /// nil: no end.
        var end: Int64?
        /// The offer a period was bought under; nil for a status interval or none.
        var offer: OfferType?
        /// A status interval's state; nil for a period.
        var status: SubscriptionState?
    }

    /// Adds to `instants` every instant where `holding`'s access may change: where its periods
    /// and status intervals begin and end, its revocations, its grace end (a non-renewing
    /// period's end as the policy's duration gives it).
    static func boundaries(of holding: Holding, in tables: ViewTables, into instants: inout Set<Int64>) {
        for time in [holding.purchase, holding.expires, holding.grace, holding.revoked] where time != 0 {
            instants.insert(time)
        }
        if let duration = tables.durations[Int(holding.product)], holding.expires == 0 {
            instants.insert(holding.purchase + duration)
        }
        guard holding.isPeriodic else { return }
        for record in tables.earlier(of: holding) {
            for time in [record.start, record.end] where time != 0 { instants.insert(time) }
            if record.status == nil {
                if record.revoked != 0 { instants.insert(record.revoked) }
                if record.end == 0, let duration = tables.durations[Int(record.productIndex)] {
                    instants.insert(record.start + duration)
                }
            }
        }
    }

    /// The fact of `holding` that holds `at`: a status interval when one does (it decides what
    /// the instant means), else the latest period that does; nil for none.
    static func fact(of holding: Holding, in tables: ViewTables, at: Int64) -> TimelineFact? {
        guard holding.isPeriodic else {
            guard holding.purchase <= at, at < (Holding.time(holding.expires) ?? Int64.max) else { return nil }
            return TimelineFact(start: holding.purchase, end: Holding.time(holding.expires))
        }
        var period: TimelineFact?
        for record in tables.earlier(of: holding) {
            let end = Holding.time(record.end)
            if record.start <= at, at < (end ?? Int64.max) {
                if let state = record.status { return TimelineFact(start: record.start, end: end, status: state) }
                period = TimelineFact(start: record.start, end: end, offer: record.offer)
            }
        }
        if holding.purchase <= at, at < (Holding.time(holding.expires) ?? Int64.max) {
            period = TimelineFact(
                start: holding.purchase, end: Holding.time(holding.expires), offer: PeriodRecord.offer(holding.offer))
        }
        return period
    }
}
