import Foundation

/// The counts an import ends with, from the file read and the outcomes recorded (this run's and
/// earlier runs'). Rows add up: `rows` is the rows of the subscriptions plus `needsToken`,
/// `skipped` and `invalid`; subscriptions add up: `subscriptions` is `imported`,
/// `alreadyPresent`, `otherAccount`, `refused` and `notDone` together.
public struct ImportReport: Sendable, Equatable, Codable {
    public var rows = 0
    public var subscriptions = 0
    public var imported = 0
    public var alreadyPresent = 0
    /// Linked to another account, by what the claim policy did (transferred, kept, refused).
    public var otherAccount: [String: Int] = [:]
    /// Refused by the verifier, by reason.
    public var refused: [String: Int] = [:]
    /// Play Store rows without a purchase token.
    public var needsToken = 0
    /// Rows of stores the import does not take, by store.
    public var skipped: [String: Int] = [:]
    /// Rows that cannot be read, by what is wrong.
    public var invalid: [String: Int] = [:]
    /// Subscriptions this run found finished by an earlier one.
    public var fromEarlierRuns = 0
    /// Subscriptions without an outcome: a dry run's, or a run stopped early.
    public var notDone = 0
    /// App Store subscriptions found in the other environment than the file gave.
    public var environmentDiffers = 0
    public var dryRun = false

    public init() {}

    /// The report of `file` given `outcomes` (by item id); `earlier` counts those an earlier run
    /// recorded.
    public init(file: ImportFile, outcomes: [String: ImportOutcome], earlier: Int, dryRun: Bool) {
        rows = file.rowCount
        subscriptions = file.items.count
        fromEarlierRuns = earlier
        self.dryRun = dryRun
        for item in file.items {
            guard let outcome = outcomes[item.id] else {
                notDone += 1
                continue
            }
            if outcome.environment != nil { environmentDiffers += 1 }
            switch outcome.kind {
            case .imported: imported += 1
            case .alreadyPresent: alreadyPresent += 1
            case .otherAccount: otherAccount[outcome.policy ?? "unknown", default: 0] += 1
            case .refused: refused[outcome.reason ?? "unknown", default: 0] += 1
            }
        }
        for row in file.unimported {
            switch row.reason {
            case .needsToken: needsToken += 1
            case .skipped(let store): skipped[store, default: 0] += 1
            case .invalid(let message): invalid[message, default: 0] += 1
            }
        }
    }

    /// The report as lines of text.
    public var text: [String] {
        var lines = [
            "\(dryRun ? "would import" : "import"): \(rows) rows, \(subscriptions) subscriptions"
                + (fromEarlierRuns > 0 ? " (\(fromEarlierRuns) finished by an earlier run)" : "")
        ]
        if dryRun {
            lines.append("  to restore         \(notDone)")
        } else {
            lines.append("  imported           \(imported)")
            lines.append("  already present    \(alreadyPresent)")
            lines.append("  other account      \(otherAccount.values.reduce(0, +))")
            lines += Self.breakdown(otherAccount)
            lines.append("  refused            \(refused.values.reduce(0, +))")
            lines += Self.breakdown(refused)
            if notDone > 0 { lines.append("  not done           \(notDone) (run again to finish)") }
            if environmentDiffers > 0 {
                lines.append(
                    "  other environment  \(environmentDiffers) (the App Store has them in the other environment than "
                        + "the file says; recorded as the App Store has them)")
            }
        }
        lines.append("  needs a token      \(needsToken) rows (Play Store rows without purchase_token)")
        lines.append("  skipped            \(skipped.values.reduce(0, +)) rows")
        lines += Self.breakdown(skipped)
        if !invalid.isEmpty {
            lines.append("  unreadable         \(invalid.values.reduce(0, +)) rows")
            lines += Self.breakdown(invalid)
        }
        return lines
    }

    /// The report as one JSON object, keys sorted.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    private static func breakdown(_ counts: [String: Int]) -> [String] {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map {
            "    \($0.value)  \($0.key)"
        }
    }

    enum CodingKeys: String, CodingKey {
        case rows, subscriptions, imported, refused, skipped, invalid
        case alreadyPresent = "already_present"
        case otherAccount = "other_account"
        case needsToken = "needs_token"
        case fromEarlierRuns = "from_earlier_runs"
        case notDone = "not_done"
        case environmentDiffers = "environment_differs"
        case dryRun = "dry_run"
    }
}
