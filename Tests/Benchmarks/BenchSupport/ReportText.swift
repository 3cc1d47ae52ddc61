import Foundation

/// Number formats and table layout the benchmark reports share.
public enum ReportText {
    /// `value` with exactly `decimals` decimals.
    public static func fixed(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

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
