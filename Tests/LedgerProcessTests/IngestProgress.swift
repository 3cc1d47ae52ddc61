import Wire

/// What the crash test's writers share: which request is next, what each acknowledged
/// request was answered, and the killer's wait for a number of acknowledgements.
actor IngestProgress {
    let total: Int
    private var nextIndex = 0
    private var aborted = false
    /// The answer to each request, by index; nil until acknowledged.
    private(set) var answers: [RecordVerifiedStateResponse?]
    /// Requests sent, resends included.
    private(set) var sends = 0
    private(set) var acknowledged = 0
    private var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    init(total: Int) {
        self.total = total
        answers = Array(repeating: nil, count: total)
    }

    /// The next request to send; nil when all are taken or the run was aborted.
    func take() -> Int? {
        guard !aborted, nextIndex < total else { return nil }
        defer { nextIndex += 1 }
        return nextIndex
    }

    func acknowledge(_ index: Int, _ answer: RecordVerifiedStateResponse, sends: Int) {
        precondition(answers[index] == nil, "request \(index) acknowledged twice")
        answers[index] = answer
        self.sends += sends
        acknowledged += 1
        let ready = waiters.filter { $0.count <= acknowledged }
        waiters.removeAll { $0.count <= acknowledged }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Returns once `count` requests are acknowledged, or the run was aborted.
    func waitUntilAcknowledged(_ count: Int) async {
        guard acknowledged < count && !aborted else { return }
        await withCheckedContinuation { waiters.append((count, $0)) }
    }

    /// Stops handing out requests and releases every waiter (a writer failed).
    func abort() {
        aborted = true
        for waiter in waiters { waiter.continuation.resume() }
        waiters = []
    }

    var wasAborted: Bool { aborted }
}
