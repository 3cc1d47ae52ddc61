import Model
import Testing
import Wire

@testable import LedgerService

/// The rules of `LinkAccount` as tables: the link and state the ledger holds and a request in,
/// the exact writes out (`LinkPlan`), with no database.
@Suite("Link plans")
struct LinkPlanTests {
    static let at: Int64 = 1_790_000_000_000
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000000000000001")
    static let stored = Subscription(
        key: key, accountID: "acct-1", productID: "pro", state: .active, storeTimeMilliseconds: at - 1)

    static func intent(_ account: String, policy: TransferPolicy = .transfer, hash: String = "h1") -> LinkIntent {
        LinkIntent(
            request: LinkAccountRequest(idempotencyKey: "k1", key: key, accountID: account, storeAccountRef: "ref"),
            key: key, policy: policy, requestHash: hash, at: at)
    }

    static func remember(_ response: LinkAccountResponse) -> LedgerWrite {
        .remember(key: "k1", requestHash: "h1", response: response.serialized(), at: at)
    }

    @Test(
        "a claim: the first account links; another account transfers, is kept or is refused by the policy",
        arguments: [
            (nil, TransferPolicy.transfer, LinkOutcome.linked, "acct-2"),
            ("acct-1", .transfer, .transferred, "acct-2"),
            ("acct-1", .keep, .kept, "acct-1"),
            ("acct-1", .refuse, .refused, "acct-1"),
        ] as [(String?, TransferPolicy, LinkOutcome, String)])
    func claim(linked: String?, policy: TransferPolicy, outcome: LinkOutcome, holder: String) throws {
        let rows = LinkRows(linkedAccount: linked, subscription: Self.stored, committedPosition: 7, lastPosition: 9)
        let plan = try LinkPlan(Self.intent("acct-2", policy: policy), rows: rows)
        let moves = holder == "acct-2"
        var subscription = Self.stored
        if moves { subscription.accountID = "acct-2" }
        var event = LifecycleEvent(
            position: 10, key: Self.key, kind: .accountLinked, storeTimeMilliseconds: Self.at,
            verifiedTimeMilliseconds: Self.at, accountID: "acct-2", otherAccountID: linked, state: .active)
        switch outcome {
        case .transferred: event.kind = .accountTransferred
        case .kept:
            event.kind = .other
            event.detail = "claim by acct-2 declined: the subscription stays with acct-1"
        case .refused:
            event.kind = .other
            event.detail = "claim by acct-2 refused: the subscription belongs to acct-1"
        default: break
        }
        let link = AccountLink(
            accountID: holder, key: Self.key, storeAccountRef: "ref", linkedTimeMilliseconds: Self.at)
        let response = LinkAccountResponse(
            outcome: outcome, previousAccountID: linked, subscription: subscription, position: 10)
        var expected: [LedgerWrite] = moves ? [.saveLink(link), .saveSubscription(subscription, position: 10)] : []
        expected += [
            .insertEvent(event),
            .appendChange(
                Change(
                    position: 10, committedTimeMilliseconds: Self.at, kind: .link, subscription: subscription,
                    link: link, events: [event])),
            Self.remember(response),
        ]
        #expect(plan.response == response)
        #expect(plan.writes == expected)
    }

    @Test("the same account again changes nothing: the answer names the newest committed position")
    func alreadyLinked() throws {
        let rows = LinkRows(linkedAccount: "acct-1", subscription: Self.stored, committedPosition: 7, lastPosition: 9)
        let plan = try LinkPlan(Self.intent("acct-1"), rows: rows)
        let response = LinkAccountResponse(outcome: .alreadyLinked, subscription: Self.stored, position: 7)
        #expect(plan.response == response)
        #expect(plan.writes == [Self.remember(response)])
    }

    @Test("a replay answers the first response and writes nothing; another request under the key is refused")
    func replay() throws {
        let first = LinkAccountResponse(outcome: .linked, subscription: Self.stored, position: 3)
        let record = IdempotencyRecord(requestHash: "h1", response: first.serialized())
        let rows = LinkRows(idempotency: record, committedPosition: 7, lastPosition: 9)
        let plan = try LinkPlan(Self.intent("acct-1"), rows: rows)
        #expect(plan.response == first)
        #expect(plan.writes.isEmpty)
        #expect(throws: LedgerError.self) { try LinkPlan(Self.intent("acct-1", hash: "h2"), rows: rows) }
    }
}
