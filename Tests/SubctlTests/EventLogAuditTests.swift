import Model
import SubctlKit
import Testing
import Wire

/// The check behind `subctl events verify`: a log against the feed's changes, no I/O.
@Suite("EventLogAudit: each change's lifecycle events in the log exactly once")
struct EventLogAuditTests {
    static let key = SubscriptionKey(store: .apple, environment: .production, storeID: "2000001")

    /// Changes 1 to 4: a purchase; a renewal and renewal turned off; a link with no event of its
    /// own; an account deletion (about no subscription).
    static let changes = [
        Change(position: 1, events: [LifecycleEvent(key: key, kind: .purchased)]),
        Change(
            position: 2,
            events: [LifecycleEvent(key: key, kind: .renewed), LifecycleEvent(key: key, kind: .renewalDisabled)]),
        Change(position: 3, kind: .link),
        Change(
            position: 4,
            events: [
                LifecycleEvent(
                    key: SubscriptionKey(store: .promotional, environment: .production, storeID: ""),
                    kind: .accountDeleted)
            ]),
    ]

    /// A logged lifecycle event: `id` of `type` for `position` at `sequence`.
    static func logged(_ id: String, _ type: String, _ position: UInt64, _ sequence: UInt64) -> Event {
        Event(id: id, type: type, position: position, sequence: sequence)
    }

    /// What the changes give, each once, with an access event and a test event in between.
    static let complete = [
        logged("evt_1_0", "subscription.purchased", 1, 1),
        Event(
            id: "evt_1_granted_0123456789abcdef", type: "access.granted", accountID: "acct-1", position: 1,
            sequence: 2),
        logged("evt_2_0", "subscription.renewed", 2, 3),
        logged("evt_2_1", "subscription.renewal_disabled", 2, 4),
        Event(id: "evt_test_00112233", type: "test", position: 2, sequence: 5),
        logged("evt_4_0", "account.deleted", 4, 6),
    ]

    /// One row of the table: a log, the range checked, and what is wrong with it.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var after: UInt64 = 0
        var through: UInt64 = 4
        var log: [Event]
        var problems: [EventLogAudit.Problem]
        var eventsChecked: Int
        var changesChecked = 4
        /// The feed's changes in the range and around it, in order.
        var changes = EventLogAuditTests.changes
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "each once: nothing wrong", log: complete, problems: [], eventsChecked: 4),
        Case(
            name: "an event of a change lost is missing",
            log: complete.filter { $0.id != "evt_2_1" },
            problems: [
                .init(kind: .missing, position: 2, id: "evt_2_1", expectedType: "subscription.renewal_disabled")
            ], eventsChecked: 3),
        Case(
            name: "every event of two changes lost: each missing",
            log: complete.filter { $0.id == "evt_2_1" },
            problems: [
                .init(kind: .missing, position: 1, id: "evt_1_0", expectedType: "subscription.purchased"),
                .init(kind: .missing, position: 2, id: "evt_2_0", expectedType: "subscription.renewed"),
                .init(kind: .missing, position: 4, id: "evt_4_0", expectedType: "account.deleted"),
            ], eventsChecked: 1),
        Case(
            name: "an id logged twice is doubled, with both sequences",
            log: complete + [logged("evt_2_0", "subscription.renewed", 2, 9)],
            problems: [
                .init(
                    kind: .doubled, position: 2, id: "evt_2_0", expectedType: "subscription.renewed",
                    logged: [
                        .init(sequence: 3, type: "subscription.renewed", position: 2),
                        .init(sequence: 9, type: "subscription.renewed", position: 2),
                    ])
            ], eventsChecked: 5),
        Case(
            name: "an index the change does not give is unexpected",
            log: complete + [logged("evt_2_2", "subscription.renewed", 2, 9)],
            problems: [
                .init(
                    kind: .unexpected, position: 2, id: "evt_2_2", expectedType: nil,
                    logged: [.init(sequence: 9, type: "subscription.renewed", position: 2)])
            ], eventsChecked: 5),
        Case(
            name: "events at a position whose change gives none, or with no change in the feed, are unexpected",
            log: complete + [
                logged("evt_3_0", "subscription.linked", 3, 9), logged("evt_4_1", "account.deleted", 4, 10),
            ],
            problems: [
                .init(
                    kind: .unexpected, position: 3, id: "evt_3_0", expectedType: nil,
                    logged: [.init(sequence: 9, type: "subscription.linked", position: 3)]),
                .init(
                    kind: .unexpected, position: 4, id: "evt_4_0", expectedType: nil,
                    logged: [.init(sequence: 6, type: "account.deleted", position: 4)]),
                .init(
                    kind: .unexpected, position: 4, id: "evt_4_1", expectedType: nil,
                    logged: [.init(sequence: 10, type: "account.deleted", position: 4)]),
            ], eventsChecked: 6, changesChecked: 3, changes: Array(changes.prefix(3))),
        Case(
            name: "an id logged with another type than the change gives is unexpected",
            log: complete.map { $0.id == "evt_2_1" ? logged("evt_2_1", "subscription.expired", 2, 4) : $0 },
            problems: [
                .init(
                    kind: .unexpected, position: 2, id: "evt_2_1", expectedType: "subscription.renewal_disabled",
                    logged: [.init(sequence: 4, type: "subscription.expired", position: 2)])
            ], eventsChecked: 4),
        Case(
            name: "an id logged for another position than its own is unexpected",
            log: complete.map { $0.id == "evt_1_0" ? logged("evt_1_0", "subscription.purchased", 7, 1) : $0 },
            problems: [
                .init(
                    kind: .unexpected, position: 1, id: "evt_1_0", expectedType: "subscription.purchased",
                    logged: [.init(sequence: 1, type: "subscription.purchased", position: 7)])
            ], eventsChecked: 4),
        Case(
            name: "a copy of another type is both doubled and unexpected, the right one not",
            log: complete + [logged("evt_1_0", "subscription.renewed", 1, 9)],
            problems: [
                .init(
                    kind: .doubled, position: 1, id: "evt_1_0", expectedType: "subscription.purchased",
                    logged: [
                        .init(sequence: 1, type: "subscription.purchased", position: 1),
                        .init(sequence: 9, type: "subscription.renewed", position: 1),
                    ]),
                .init(
                    kind: .unexpected, position: 1, id: "evt_1_0", expectedType: "subscription.purchased",
                    logged: [.init(sequence: 9, type: "subscription.renewed", position: 1)]),
            ], eventsChecked: 5),
        Case(
            name: "after a position (--from): the changes and events up to it are passed over",
            after: 1, through: 4,
            log: complete.filter { $0.id != "evt_2_0" } + [logged("evt_1_0", "subscription.purchased", 1, 9)],
            problems: [.init(kind: .missing, position: 2, id: "evt_2_0", expectedType: "subscription.renewed")],
            eventsChecked: 2, changesChecked: 3),
        Case(
            name: "beyond the position computation covers: the changes and events after it are passed over",
            through: 2,
            log: complete.filter { $0.id != "evt_4_0" } + [logged("evt_3_5", "subscription.renewed", 3, 9)],
            problems: [], eventsChecked: 3, changesChecked: 2),
        Case(
            name: "an empty range checks nothing",
            after: 4, through: 4, log: complete + [logged("evt_4_0", "account.deleted", 4, 9)], problems: [],
            eventsChecked: 0, changesChecked: 0),
    ]

    @Test(arguments: cases)
    func audit(_ row: Case) {
        var audit = EventLogAudit(after: row.after, through: row.through)
        for event in row.log { audit.record(event) }
        for change in row.changes { audit.check(change) }
        #expect(audit.problems == row.problems)
        #expect(audit.eventsChecked == row.eventsChecked)
        #expect(audit.changesChecked == row.changesChecked)
    }
}
