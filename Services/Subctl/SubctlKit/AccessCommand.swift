/// A command to the entitlement service about one account's access.
public enum AccessCommand: Sendable, Equatable {
    /// `access timeline ACCOUNT_ID [--capability NAME] [--from TIME] [--to TIME]`:
    /// Entitlement/GetAccessTimeline over `from` to `to` (epoch milliseconds; nil: a year before
    /// now, and 31 days after now).
    case timeline(account: String, capability: String?, from: Int64?, to: Int64?)

    /// The full name of the method the command calls.
    public var method: String {
        switch self {
        case .timeline: "subscriptions.entitlement.v1.Entitlement/GetAccessTimeline"
        }
    }

    /// How far before now a timeline starts, and after now it ends, when not given.
    static let defaultPast: Int64 = 366 * 86_400_000
    static let defaultFuture: Int64 = 31 * 86_400_000

    /// Epoch milliseconds from `text`: a number of them, or a UTC date `2026-01-31`, or a time
    /// `2026-01-31T12:00:00Z` (with `.250` before the `Z` when wanted); nil for anything else.
    static func instant(_ text: String) -> Int64? {
        if let number = Int64(text) { return number }
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count, range.allSatisfy({ (48...57).contains(bytes[$0]) }) else {
                return nil
            }
            return range.reduce(0) { $0 * 10 + Int64(bytes[$1] - 48) }
        }
        guard bytes.count >= 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var milliseconds: Int64 = 0
        if bytes.count > 10 {
            guard bytes.count >= 20, bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
                bytes[16] == UInt8(ascii: ":"), bytes.last == UInt8(ascii: "Z"),
                let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
                hour < 24, minute < 60, second < 60
            else { return nil }
            milliseconds = ((hour * 60 + minute) * 60 + second) * 1000
            if bytes.count != 20 {
                guard bytes.count == 24, bytes[19] == UInt8(ascii: "."), let fraction = number(20..<23) else {
                    return nil
                }
                milliseconds += fraction
            }
        }
        // Howard Hinnant's days_from_civil: days from 1970-01-01 to the proleptic Gregorian date.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400_000 + milliseconds
    }
}
