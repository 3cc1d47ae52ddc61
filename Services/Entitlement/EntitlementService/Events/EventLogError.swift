/// Why the event log's catch-up stopped short: the ledger has not started the log, or its change
/// feed ended before the view's position. Logged, and the catch-up is tried again; never sent to
/// a caller.
struct EventLogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem.
    struct Code: Sendable, Hashable {
        private enum Known: Sendable { case notStarted, feedEnded }
        private let known: Known
        private init(_ known: Known) { self.known = known }

        /// The ledger has not started the event log (an older ledger, or no lease taken yet).
        static let notStarted = Code(.notStarted)
        /// The change feed ended before the position the events were to cover.
        static let feedEnded = Code(.feedEnded)
    }

    let code: Code
    let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }
}
