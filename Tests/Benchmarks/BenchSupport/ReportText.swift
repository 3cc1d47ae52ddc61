import Foundation

/// Number formats and table layout the benchmark reports share.
public enum ReportText {
    /// `value` with exactly `decimals` decimals.
    public static func fixed(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

    /// The lowest and highest of `values` as "0.77–0.91" (two decimals); "-" for fewer than two.
    public static func range(_ values: [Double]) -> String {
        guard values.count > 1, let low = values.min(), let high = values.max() else { return "-" }
        return "\(fixed(low, 2))–\(fixed(high, 2))"
    }

    /// The middle value of `values` (the mean of the two middle ones for an even count); 0 for none.
    public static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// A whole number with thousands separators: 1234567.8 → "1,234,568".
    public static func grouped(_ value: Double) -> String {
        let digits = Array(fixed(value, 0))
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 && digit != "-" && digits[index - 1] != "-" {
                text.append(",")
            }
            text.append(digit)
        }
        return text
    }

    /// Rows of cells, each column right-aligned to its widest cell, two spaces apart.
    public static func table(_ lines: [[String]]) -> String {
        let columns = lines.map(\.count).max() ?? 0
        let widths = (0..<columns).map { column in lines.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return lines.map { cells in
            zip(cells, widths).map { String(repeating: " ", count: $1 - $0.count) + $0 }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
