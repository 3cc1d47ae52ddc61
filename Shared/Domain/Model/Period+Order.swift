extension Period {
    /// Of two versions of one period (the same `periodID`), the one that stands. A pure rule that
    /// does not depend on which arrived first:
    /// 1. the one the store signed later (a refund after the purchase, a reversal after the refund);
    /// 2. at the same signed time, the one that ends access sooner (an earlier revocation, then
    ///    an earlier end; no end counts as the latest);
    /// 3. then the one with the smaller `contentHash`; equal hashes are the same fact.
    public static func standing(_ a: Period, _ b: Period) -> Period {
        let signedA = a.signedTimeMilliseconds ?? Int64.min
        let signedB = b.signedTimeMilliseconds ?? Int64.min
        if signedA != signedB { return signedA > signedB ? a : b }
        let endA = a.accessEnd
        let endB = b.accessEnd
        if endA != endB { return endA < endB ? a : b }
        return a.contentHash <= b.contentHash ? a : b
    }

    /// Where access from this period ends, ignoring other periods: its revocation or its end,
    /// whichever is first; `Int64.max` for neither.
    var accessEnd: Int64 {
        min(revokedTimeMilliseconds ?? Int64.max, paidEnd ?? Int64.max)
    }

    /// The end of the paid time: its end, or where access stopped when that is sooner (a
    /// version read only while access had stopped has no end of its own but that).
    public var paidEnd: Int64? {
        guard let stopped = stoppedTimeMilliseconds else { return endMilliseconds }
        return min(endMilliseconds ?? stopped, stopped)
    }

    /// A stable 64-bit FNV-1a hash of every field but `raw`, the same in every process and
    /// version (the tie-break of `standing`).
    public var contentHash: UInt64 {
        var hash = ContentHash()
        hash.add(periodID)
        hash.add(productID)
        hash.add(basePlanID)
        hash.add(startMilliseconds)
        hash.add(endMilliseconds)
        hash.add(offerType?.rawValue)
        hash.add(revokedTimeMilliseconds)
        hash.add(revocationReason)
        hash.add(signedTimeMilliseconds)
        hash.add(productKind?.rawValue)
        if let stoppedTimeMilliseconds { hash.add(stoppedTimeMilliseconds) }
        return hash.value
    }

    /// The periods as access reads them, from every recorded period of one subscription
    /// (one version per `periodID`, see `standing`), with no raw data:
    /// - ordered by start (then id);
    /// - for an Apple chain (`clipsAtNextStart`), a period that starts where another ends, while
    ///   a period of a product other than that one's began inside it, is dropped: it is a renewal
    ///   charged early that a plan change at once (an upgrade) after the charge replaced before
    ///   it began (Apple marks it `isUpgraded`);
    /// - then, for an Apple chain, a period ends no later than the start of the next period that
    ///   starts inside it: one transaction of a chain is in force at a time, and a transaction
    ///   that starts inside another is an upgrade (Apple also marks the old one `isUpgraded`,
    ///   which not every payload of the old one carries);
    /// - with `revocationEndsChain` (an Apple family-shared chain, where a revocation is the end of
    ///   the sharing, REVOKE), each revocation made before its own period ended also ends every
    ///   period that began before it and runs past it, so a REVOKE carried by a renewal charged
    ///   early ends today's access too;
    /// - contiguous unrevoked periods of one product, plan, kind and offer type (the next starts
    ///   at or before the previous one's end: an early renewal starts exactly there) become one,
    ///   named by the latest (a free trial stays apart from the paid months after it, so a
    ///   timeline can tell them apart).
    public static func accessPeriods(
        _ periods: [Period], clipsAtNextStart: Bool, revocationEndsChain: Bool = false
    ) -> [Period] {
        var sorted = periods.sorted {
            ($0.startMilliseconds, $0.periodID) < ($1.startMilliseconds, $1.periodID)
        }
        if clipsAtNextStart {
            let replaced = replacedRenewals(sorted)
            if !replaced.isEmpty { sorted.removeAll { isReplaced($0, replaced) } }
        }
        for index in sorted.indices {
            sorted[index].raw = nil
            guard clipsAtNextStart else { continue }
            let start = sorted[index].startMilliseconds
            if let next = sorted[(index + 1)...].first(where: { $0.startMilliseconds > start }),
                next.startMilliseconds < (sorted[index].endMilliseconds ?? Int64.max)
            {
                sorted[index].endMilliseconds = next.startMilliseconds
            }
        }
        if revocationEndsChain { endAtRevocations(&sorted) }
        var merged: [Period] = []
        for period in sorted {
            if var last = merged.last, let lastEnd = last.endMilliseconds, last.revokedTimeMilliseconds == nil,
                period.revokedTimeMilliseconds == nil, period.productID == last.productID,
                period.basePlanID == last.basePlanID, period.productKind == last.productKind,
                period.offerType == last.offerType, period.startMilliseconds <= lastEnd
            {
                last.endMilliseconds = period.endMilliseconds.map { max($0, lastEnd) }
                last.periodID = period.periodID
                last.signedTimeMilliseconds = max(
                    last.signedTimeMilliseconds ?? Int64.min, period.signedTimeMilliseconds ?? Int64.min)
                merged[merged.count - 1] = last
            } else {
                merged.append(period)
            }
        }
        return merged
    }

    /// The renewals charged early that a plan change replaced before they began, in `sorted`
    /// (ordered by start): by where they start, the end of each period inside which a period of
    /// another product began (a change at once; a change at renewal starts where the old period
    /// ends), with the products of those changes, whose own periods starting there are their
    /// renewals and stay. Ends as recorded, before any cut. In start order, so that a period
    /// already found replaced neither replaces another nor counts as a change (the upgrade's own
    /// renewal, charged early, starts after a replaced one began inside the upgrade's period). In
    /// a chain periods follow one another, so each scan stops after a step or two.
    static func replacedRenewals(_ sorted: [Period]) -> [Int64: Set<String>] {
        var replaced: [Int64: Set<String>] = [:]
        for (index, previous) in sorted.enumerated() where !isReplaced(previous, replaced) {
            guard let end = previous.endMilliseconds, previous.startMilliseconds < end else { continue }
            var next = index + 1
            while next < sorted.count, sorted[next].startMilliseconds < end {
                let change = sorted[next]
                next += 1
                guard !isReplaced(change, replaced) else { continue }
                if change.startMilliseconds > previous.startMilliseconds, change.productID != previous.productID {
                    replaced[end, default: []].insert(change.productID)
                }
            }
        }
        return replaced
    }

    /// Whether `period` is a renewal that `replaced` (see `replacedRenewals`) drops.
    static func isReplaced(_ period: Period, _ replaced: [Int64: Set<String>]) -> Bool {
        guard let changes = replaced[period.startMilliseconds] else { return false }
        return !changes.contains(period.productID)
    }

    /// Each revocation in `periods` made before its own period ended (a REVOKE; a refund of an
    /// old transaction, made after it ended, is that period's alone) also revokes, at its time,
    /// every period that began before it and whose paid time runs past it, and the renewal
    /// charged early that starts where its own period ends: Apple may put a REVOKE made while
    /// that renewal waits on it or on the transaction in force. The earliest such revocation,
    /// with its reason.
    static func endAtRevocations(_ periods: inout [Period]) {
        let revocations = periods.compactMap { period in
            period.revokedTimeMilliseconds.flatMap { time in
                time <= (period.endMilliseconds ?? Int64.max)
                    ? (time: time, reason: period.revocationReason, end: period.endMilliseconds) : nil
            }
        }.sorted { ($0.time, $0.reason ?? "") < ($1.time, $1.reason ?? "") }
        guard !revocations.isEmpty else { return }
        for index in periods.indices {
            let period = periods[index]
            let runsTo = min(period.revokedTimeMilliseconds ?? Int64.max, period.endMilliseconds ?? Int64.max)
            guard
                let revocation = revocations.first(where: {
                    $0.time < runsTo
                        && (period.startMilliseconds < $0.time
                            || (period.startMilliseconds == $0.end && $0.time < period.startMilliseconds))
                })
            else { continue }
            periods[index].revokedTimeMilliseconds = revocation.time
            periods[index].revocationReason = revocation.reason
        }
    }
}

/// FNV-1a over fields, each preceded by a tag so that absent and empty differ.
struct ContentHash {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func byte(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    mutating func add(_ text: String?) {
        guard let text else { return byte(0) }
        byte(1)
        for unit in text.utf8 { byte(unit) }
        byte(0xFF)
    }

    mutating func add<T: FixedWidthInteger>(_ number: T?) {
        guard let number else { return byte(0) }
        byte(1)
        var bits = UInt64(truncatingIfNeeded: number)
        for _ in 0..<8 {
            byte(UInt8(truncatingIfNeeded: bits))
            bits >>= 8
        }
    }
}
