import AppStore

/// The output of `apple verify`: the payload's JSON, a verdict line per JWS found inside it, and
/// last the overall verdict.
extension OutputText {
    /// The lines `apple verify` prints for `report`: its JSON (when the payload is JSON), then
    /// `PATH: valid` or `PATH: invalid: CODE: reason` for each nested JWS, then the overall
    /// verdict: `valid`, or `invalid: CODE: reason` of the first refusal (its path before the
    /// reason when it is a nested one).
    public static func apple(_ report: AppleVerificationReport) -> [String] {
        var lines = report.json.map { [$0] } ?? []
        for verdict in report.verdicts.dropFirst() {
            lines.append("\(verdict.path): \(verdict.refusal.map { "invalid: \($0)" } ?? "valid")")
        }
        if let (_, error) = report.refusal, let message = report.refusalMessage {
            lines.append("invalid: \(error.code): \(message)")
        } else {
            lines.append("valid")
        }
        return lines
    }
}
