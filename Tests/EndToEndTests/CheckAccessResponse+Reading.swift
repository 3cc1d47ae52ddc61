import Wire

extension CheckAccessResponse {
    /// Where an allowed answer's access ends, epoch ms; no end (0 or none) as the latest instant.
    var accessEnd: Int64 {
        guard let until = untilMilliseconds, until != 0 else { return .max }
        return until
    }

    /// The answer in words: allowed with its end, or denied with the reason, and the state of
    /// the subscription behind it; `time` writes an instant.
    func described(time: (Int64) -> String = { String($0) }) -> String {
        let state = grant?.state.map { ", state \($0)" } ?? ""
        if allowed { return "allowed until \(untilMilliseconds.map(time) ?? "no end")\(state)" }
        return "denied \(reason.map { "\($0)" } ?? "-")\(state)"
    }
}
