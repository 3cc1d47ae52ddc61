import Crypto
import Foundation
import Model
public import RPC
public import Wire

/// Carries out an import: each distinct subscription of the file not finished by an earlier run
/// is restored once through the verifier's `RestorePurchases`, up to `concurrency` calls in
/// flight and at most `rate` starts a second between them. Outcomes come back in any order; one
/// writer appends each to the progress file, synced, before it counts as done.
///
/// A rate-limit answer (RESOURCE_EXHAUSTED) or an outage (UNAVAILABLE, DEADLINE_EXCEEDED) is
/// retried with the same idempotency key after the wait the verifier names ("after N s"), or
/// 1, 2, 4 … 60 s; a rate limit's wait holds back every call of the run, an outage's only the
/// call that met it. After `maxAttempts` the run stops: no new call starts, the calls in flight
/// are cancelled (a retry gives up), what finished is recorded, and a later run goes on from
/// there.
public struct ImportRun {
    /// Tries of one subscription before the run stops.
    public static let maxAttempts = 8

    let options: ImportOptions
    let transport: (any ClientTransport)?
    /// Sleeps for a duration (the rate's spacing, a back-off).
    let sleep: @Sendable (Duration) async -> Void
    /// Monotonic time.
    let now: @Sendable () -> ContinuousClock.Instant
    /// Receives the progress bar's line when stdout is a terminal.
    let status: ((String) -> Void)?

    public init(
        options: ImportOptions, transport: (any ClientTransport)?,
        sleep: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        status: ((String) -> Void)? = nil
    ) {
        self.options = options
        self.transport = transport
        self.sleep = sleep
        self.now = now
        self.status = status
    }

    /// Reads the file, imports what is left, and answers the report. Throws `invalidArgument`
    /// for an unreadable file or progress file, and the last call's error when a subscription
    /// could not be tried to the end (the report of what was done is written first by the caller
    /// through `partial`).
    public func run(partial: (ImportReport) -> Void = { _ in }) async throws(SubctlError) -> ImportReport {
        guard let data = FileManager.default.contents(atPath: options.path) else {
            throw SubctlError(.invalidArgument, "cannot read the import file \(options.path)")
        }
        let file = try ImportFile.read(String(decoding: data, as: UTF8.self), accountSource: options.accountSource)
        if options.dryRun {
            return ImportReport(file: file, outcomes: [:], earlier: 0, dryRun: true)
        }
        guard let transport else { preconditionFailure("an import needs a transport") }
        let progress = try ImportProgress(path: options.progressPath)
        let earlier = file.items.filter { progress.outcomes[$0.id] != nil }.count
        let pending = file.items.filter { progress.outcomes[$0.id] == nil }
        let start = now()
        let pace = ImportPace(rate: options.rate)
        let (options, sleep, now) = (options, sleep, now)
        let call: @Sendable (ImportFile.Item) async -> Result<ImportOutcome, SubctlError> = { item in
            await Self.importOne(item, options: options, transport: transport, pace: pace, sleep: sleep, now: now)
        }
        let failure = await withTaskGroup(of: Result<ImportOutcome, SubctlError>.self) { group in
            var items = pending.makeIterator()
            var failure: SubctlError?
            var done = 0
            for _ in 0..<max(1, options.concurrency) {
                guard let item = items.next() else { break }
                group.addTask { await call(item) }
            }
            // The one writer of the progress file: outcomes come in as calls finish, in any order.
            while let result = await group.next() {
                do throws(SubctlError) {
                    try progress.record(try result.get())
                    done += 1
                    if let status { status(bar(done: done, of: pending.count, since: start)) }
                } catch {
                    if failure == nil {
                        failure = error
                        group.cancelAll()
                    }
                }
                if failure == nil, let item = items.next() {
                    group.addTask { await call(item) }
                }
            }
            return failure
        }
        let report = ImportReport(file: file, outcomes: progress.outcomes, earlier: earlier, dryRun: false)
        if let failure {
            partial(report)
            throw failure
        }
        return report
    }

    /// Restores one subscription, retrying a rate limit (which pauses every call of the run) or
    /// an outage (this one only) with the same key; gives up when the run is cancelled.
    static func importOne(
        _ item: ImportFile.Item, options: ImportOptions, transport: any ClientTransport, pace: ImportPace,
        sleep: (Duration) async -> Void, now: () -> ContinuousClock.Instant
    ) async -> Result<ImportOutcome, SubctlError> {
        let request = Self.request(item, fileName: options.path, reason: options.reason)
        var attempt = 0
        while true {
            attempt += 1
            await pace.admit(now: now, sleep: sleep)
            do {
                let answer = try await transport.call(
                    VerifierRPC.restorePurchases.name, request, as: RestorePurchasesResponse.self,
                    timeout: options.call?.timeout)
                return .success(Self.outcome(item, answer.response))
            } catch {
                guard let status = error.code.status else { return .failure(error) }
                switch status {
                case .resourceExhausted, .unavailable, .deadlineExceeded:
                    guard attempt < Self.maxAttempts, !Task.isCancelled else { return .failure(error) }
                    let wait = Self.wait(error.message, attempt: attempt)
                    if status == .resourceExhausted {
                        pace.pause(for: wait, now: now())
                    } else {
                        await sleep(wait)
                    }
                default:
                    return .success(
                        ImportOutcome(id: item.id, kind: .refused, reason: "\(status.name): \(error.message)"))
                }
            }
        }
    }

    /// The request restoring `item`: its idempotency key is derived from the import file's name
    /// and the subscription, so a later run (or a retry) sends the same one.
    static func request(_ item: ImportFile.Item, fileName: String, reason: String?) -> RestorePurchasesRequest {
        let name = String((fileName as NSString).lastPathComponent.prefix(80))
        var request = RestorePurchasesRequest(
            accountID: item.accountID,
            idempotencyKey: "import-" + Digest.sha256Hex(Array("\(name)\n\(item.id)".utf8)).prefix(48))
        switch item.purchase {
        case .apple(let transactionID, _):
            request.appleTransactionIDs = [transactionID]
        case .google(let packageName, let productID, let purchaseToken):
            request.googlePurchases = [
                GooglePurchaseRef(packageName: packageName, productID: productID, purchaseToken: purchaseToken)
            ]
        }
        request.reason = "\(reason ?? "import") (\(name) row \(item.rows.first ?? 0))"
        return request
    }

    /// The outcome `response` gives `item`: the restored purchase whose store id is the item's
    /// (else the first one named).
    public static func outcome(_ item: ImportFile.Item, _ response: RestorePurchasesResponse) -> ImportOutcome {
        var outcome = linkOutcome(item, response)
        if case .apple(_, let sandbox) = item.purchase, outcome.kind != .refused,
            let answered = response.restored.first?.key?.environment,
            answered != (sandbox ? StoreEnvironment.sandbox : .production)
        {
            outcome.environment = answered.description
        }
        return outcome
    }

    /// `outcome` without the environment check.
    private static func linkOutcome(_ item: ImportFile.Item, _ response: RestorePurchasesResponse) -> ImportOutcome {
        let storeID: String
        switch item.purchase {
        case .apple(let transactionID, _): storeID = transactionID
        case .google(_, _, let purchaseToken): storeID = purchaseToken
        }
        guard let restored = response.restored.first(where: { $0.key?.storeID == storeID }) ?? response.restored.first
        else {
            return ImportOutcome(id: item.id, kind: .refused, reason: "the store named no subscription for it")
        }
        switch restored.link {
        case .linked?: return ImportOutcome(id: item.id, kind: .imported)
        case .alreadyLinked?, .alreadyRecorded?: return ImportOutcome(id: item.id, kind: .alreadyPresent)
        case .transferred?:
            return ImportOutcome(
                id: item.id, kind: .otherAccount, policy: "transferred", otherAccountID: restored.otherAccountID)
        case .kept?:
            return ImportOutcome(
                id: item.id, kind: .otherAccount, policy: "kept", otherAccountID: restored.otherAccountID)
        case .refused?:
            return ImportOutcome(
                id: item.id, kind: .otherAccount, policy: "refused", otherAccountID: restored.otherAccountID)
        default:
            return ImportOutcome(id: item.id, kind: .refused, reason: "the verifier gave no link outcome")
        }
    }

    /// The wait a refusal names ("after 30 s"), else 1, 2, 4 … 60 s by attempt.
    public static func wait(_ message: String, attempt: Int) -> Duration {
        if let range = message.range(of: #"after (\d+) s"#, options: .regularExpression) {
            let digits = message[range].filter(\.isNumber)
            if let seconds = Int(digits) { return .seconds(min(max(seconds, 1), 3600)) }
        }
        return .seconds(min(1 << min(attempt - 1, 6), 60))
    }

    /// `[#####.....] 512/1000  9.8/s  50s left`.
    func bar(done: Int, of total: Int, since start: ContinuousClock.Instant) -> String {
        let elapsed = Double((now() - start).components.seconds) + Double((now() - start).components.attoseconds) / 1e18
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let width = 30
        let filled = total > 0 ? width * done / total : width
        let left = rate > 0 ? Int(Double(total - done) / rate) : 0
        return "[\(String(repeating: "#", count: filled))\(String(repeating: ".", count: width - filled))] "
            + "\(done)/\(total)  \(String(format: "%.1f", rate))/s  \(left)s left"
    }
}
