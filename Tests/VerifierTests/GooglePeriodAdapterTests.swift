import Clients
import Foundation
import GooglePlay
import Model
import RPC
import TestSupport
import Testing
import Wire

@testable import VerifierService

/// The Google adapter against a real ledger with the Play API held at will: orders as periods,
/// no stale writes, sticky revocation, pending changes, voids of any order, routing.
@Suite("Google Play periods, writes and routing", .serialized)
struct GooglePeriodAdapterTests {
    typealias Harness = GoogleAdapterTests.Harness
    static let day: Int64 = 86_400_000

    static func verify(_ harness: Harness, _ token: String, account: String = "user-1") async throws
        -> VerifyPurchaseResponse
    {
        try await harness.adapter.verifyPurchase(
            VerifyGooglePurchaseRequest(
                accountID: account, packageName: GoogleAdapterTests.package, productID: "pro_monthly",
                purchaseToken: token, idempotencyKey: "verify-\(token)"))
    }

    static func notify(_ harness: Harness, _ type: Int, _ token: String, id: String) async {
        await harness.adapter.process(
            messageID: id, packageName: GoogleAdapterTests.package, eventTime: harness.clock.milliseconds,
            work: .subscription(type: type, token: token, productID: "pro_monthly"))
    }

    /// A period as access reads it: start, end, revocation.
    static func times(_ periods: [Period]) -> [[Int64?]] {
        periods.map { [$0.startMilliseconds, $0.endMilliseconds, $0.revokedTimeMilliseconds] }
    }

    @Test("a slow fetch that read ACTIVE does not overwrite a later one that read ON_HOLD")
    func slowFetch() async throws {
        let harness = try await Harness()
        do {
            harness.api.setSubscription("tok-a", harness.purchase(acknowledged: true))
            _ = try await Self.verify(harness, "tok-a")
            harness.clock.advance(seconds: 1)
            let gate = harness.api.hold("get tok-a")
            let slow = Task { try await harness.adapter.refresh(harness.key("tok-a")) }
            await gate.arrival()
            harness.clock.advance(seconds: 1)
            harness.api.setSubscription(
                "tok-a", harness.purchase(state: "SUBSCRIPTION_STATE_ON_HOLD", acknowledged: true))
            _ = try await harness.adapter.refresh(harness.key("tok-a"))
            gate.open()
            _ = try await slow.value
            let state = try #require(try await harness.ledger.subscription(harness.key("tok-a")))
            #expect(state.state == .accountHold)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("an acknowledgement answered late does not bring back access revoked meanwhile, and is kept")
    func slowAcknowledgement() async throws {
        let harness = try await Harness()
        do {
            harness.api.setSubscription("tok-b", harness.purchase(account: "user-1"))
            let gate = harness.api.hold("acknowledge tok-b")
            let verifying = Task { try await Self.verify(harness, "tok-b") }
            await gate.arrival()
            harness.clock.advance(seconds: 1)
            // Play revokes it while the acknowledgement is on its way: subscriptionsv2 reads expired.
            var revoked = harness.purchase(state: "SUBSCRIPTION_STATE_EXPIRED", acknowledged: true, account: "user-1")
            revoked.lineItems![0].expiryTime = harness.iso(harness.clock.milliseconds)
            harness.api.setSubscription("tok-b", revoked)
            await Self.notify(harness, 12, "tok-b", id: "m-revoked")
            harness.clock.advance(seconds: 1)
            gate.open()
            _ = try await verifying.value
            let state = try #require(try await harness.ledger.subscription(harness.key("tok-b")))
            #expect(state.state == .revoked && state.acknowledged)
            #expect(state.periods.last?.revokedTimeMilliseconds == harness.clock.milliseconds - 1000)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test(
        "REVOKED then EXPIRED, both reading EXPIRED, ends revoked with its time in either order",
        arguments: [true, false])
    func stickyRevocation(revokedFirst: Bool) async throws {
        let harness = try await Harness()
        do {
            harness.api.setSubscription("tok-c", harness.purchase(acknowledged: true))
            _ = try await Self.verify(harness, "tok-c")
            harness.clock.advance(seconds: 60)
            let revokedAt = harness.clock.milliseconds
            var expired = harness.purchase(state: "SUBSCRIPTION_STATE_EXPIRED", acknowledged: true)
            expired.lineItems![0].expiryTime = harness.iso(revokedAt)
            harness.api.setSubscription("tok-c", expired)
            for type in revokedFirst ? [12, 13] : [13, 12] {
                await Self.notify(harness, type, "tok-c", id: "m-\(type)")
                harness.clock.advance(seconds: 1)
            }
            let state = try #require(try await harness.ledger.subscription(harness.key("tok-c")))
            #expect(state.state == .revoked && state.revokedTimeMilliseconds == revokedAt)
            #expect(state.periods.map(\.revokedTimeMilliseconds) == [revokedAt])
            #expect(state.periods.map(\.endMilliseconds) == [revokedAt])
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("voiding last month's renewal revokes that order's period only; this month's stays")
    func voidPastOrder() async throws {
        let harness = try await Harness()
        do {
            let start = harness.clock.milliseconds
            var purchase = harness.purchase(acknowledged: true)
            purchase.startTime = harness.iso(start)
            purchase.lineItems![0].expiryTime = harness.iso(start + 30 * Self.day)
            harness.api.setSubscription("tok-d", purchase)
            _ = try await Self.verify(harness, "tok-d")
            harness.clock.advance(seconds: 30 * 86_400)
            purchase.lineItems![0].latestSuccessfulOrderId = "GPA.1234-5678-9012-34567..0"
            purchase.lineItems![0].expiryTime = harness.iso(start + 60 * Self.day)
            harness.api.setSubscription("tok-d", purchase)
            await Self.notify(harness, 2, "tok-d", id: "m-renewed")
            harness.clock.advance(seconds: 86_400)
            let voidTime = harness.clock.milliseconds
            await harness.adapter.process(
                messageID: "m-void", packageName: GoogleAdapterTests.package, eventTime: voidTime,
                work: .voided(token: "tok-d", orderID: "GPA.1234-5678-9012-34567", productType: 1, refundType: 1))
            let state = try #require(try await harness.ledger.subscription(harness.key("tok-d")))
            #expect(state.periods.map(\.startMilliseconds) == [start, start + 30 * Self.day])
            #expect(state.periods.map(\.endMilliseconds) == [start + 30 * Self.day, start + 60 * Self.day])
            #expect(state.periods.map(\.revokedTimeMilliseconds) == [voidTime, nil])
            #expect(state.state == .active)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("a void of an order not recorded yet reads the purchase, records the order, and revokes it")
    func voidBeforeItsOrder() async throws {
        let harness = try await Harness()
        do {
            var purchase = harness.purchase(acknowledged: true)
            harness.api.setSubscription("tok-v", purchase)
            _ = try await Self.verify(harness, "tok-v")
            // Renewed at Play; the RENEWED notification has not been processed yet.
            harness.clock.advance(seconds: 60)
            purchase.lineItems![0].latestSuccessfulOrderId = "GPA.1234-5678-9012-34567..0"
            purchase.lineItems![0].expiryTime = harness.iso(harness.clock.milliseconds + 60 * Self.day)
            harness.api.setSubscription("tok-v", purchase)
            let voidTime = harness.clock.milliseconds
            await harness.adapter.process(
                messageID: "m-void-first", packageName: GoogleAdapterTests.package, eventTime: voidTime,
                work: .voided(token: "tok-v", orderID: "GPA.1234-5678-9012-34567..0", productType: 1, refundType: 1))
            let state = try #require(try await harness.ledger.subscription(harness.key("tok-v")))
            #expect(state.periods.last?.revokedTimeMilliseconds == voidTime)
            #expect(state.periods.count == 2)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("a quantity-based partial refund keeps a one-time purchase while units are left")
    func partialRefund() async throws {
        let harness = try await Harness()
        do {
            var lifetime = ProductPurchase()
            lifetime.purchaseState = 0
            lifetime.acknowledgementState = 1
            lifetime.purchaseTimeMillis = String(harness.clock.milliseconds - 1000)
            lifetime.orderId = "GPA.0000-0000-0000-00009"
            lifetime.quantity = 3
            harness.api.setProduct("life-q", lifetime)
            _ = try await harness.adapter.verifyPurchase(
                VerifyGooglePurchaseRequest(
                    accountID: "user-9", packageName: GoogleAdapterTests.package, productID: "lifetime",
                    purchaseToken: "life-q", idempotencyKey: "g-q"))
            for (quantity, time) in [(1, harness.clock.milliseconds), (3, harness.clock.milliseconds + 1000)] {
                var voided = VoidedPurchase()
                voided.purchaseToken = "life-q"
                voided.orderId = "GPA.0000-0000-0000-00009"
                voided.voidedTimeMillis = String(time)
                voided.voidedQuantity = quantity
                harness.api.addVoided(voided)
                harness.clock.advance(seconds: 2)
                await GoogleReconciler(adapter: harness.adapter, interval: .zero).runPass()
                let state = try #require(try await harness.ledger.subscription(harness.key("life-q")))
                #expect(state.periods.map(\.revokedTimeMilliseconds) == [quantity == 3 ? time : nil])
            }
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("a pending change replaces nothing, a dropped one reads the old token again, a real one ends it at its start")
    func pendingChange() async throws {
        let harness = try await Harness()
        do {
            harness.api.setSubscription("tok-old", harness.purchase(acknowledged: true))
            _ = try await Self.verify(harness, "tok-old")
            let before = try #require(try await harness.ledger.subscription(harness.key("tok-old")))
            harness.clock.advance(seconds: 3600)
            var pending = harness.purchase(
                state: "SUBSCRIPTION_STATE_PENDING", acknowledged: true, linked: "tok-old", product: "pro_premium")
            pending.lineItems![0].latestSuccessfulOrderId = nil
            harness.api.setSubscription("tok-new", pending)
            await Self.notify(harness, 4, "tok-new", id: "m-pending")
            var old = try #require(try await harness.ledger.subscription(harness.key("tok-old")))
            #expect(old.replacedByStoreID == nil && Self.times(old.periods) == Self.times(before.periods))

            pending.subscriptionState = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
            harness.api.setSubscription("tok-new", pending)
            harness.clock.advance(seconds: 1)
            await Self.notify(harness, 20, "tok-new", id: "m-dropped")
            old = try #require(try await harness.ledger.subscription(harness.key("tok-old")))
            #expect(old.replacedByStoreID == nil && Self.times(old.periods) == Self.times(before.periods))
            #expect(old.state == .active)
            #expect(harness.api.calls.suffix(2) == ["get tok-new", "get tok-old"])

            harness.clock.advance(seconds: 1)
            let changedAt = harness.clock.milliseconds
            var real = harness.purchase(acknowledged: true, linked: "tok-old", product: "pro_premium")
            real.startTime = harness.iso(changedAt)
            real.lineItems![0].latestSuccessfulOrderId = "GPA.2222-2222-2222-22222"
            harness.api.setSubscription("tok-new", real)
            await Self.notify(harness, 4, "tok-new", id: "m-real")
            old = try #require(try await harness.ledger.subscription(harness.key("tok-old")))
            #expect(old.replacedByStoreID == "tok-new")
            #expect(old.periods.last?.endMilliseconds == changedAt)
            let new = try #require(try await harness.ledger.subscription(harness.key("tok-new")))
            #expect(new.accountID == "user-1" && new.periods.first?.startMilliseconds == changedAt)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("a replacement reads the token it replaces once, also when two answers name each other")
    func replacedReadOnce() async throws {
        let harness = try await Harness()
        do {
            harness.api.setSubscription("tok-x", harness.purchase(acknowledged: true))
            harness.api.setSubscription("tok-y", harness.purchase(acknowledged: true))
            _ = try await Self.verify(harness, "tok-x")
            _ = try await Self.verify(harness, "tok-y")
            harness.api.setSubscription("tok-x", harness.purchase(acknowledged: true, linked: "tok-y"))
            harness.api.setSubscription("tok-y", harness.purchase(acknowledged: true, linked: "tok-x"))
            let before = harness.api.calls.count
            _ = try await harness.adapter.refresh(harness.key("tok-x"))
            #expect(Array(harness.api.calls.dropFirst(before)) == ["get tok-x", "get tok-y"])
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("an immediate upgrade from a plan whose renewal was off moves access at the upgrade, with no gap")
    func upgradeFromCancelled() async throws {
        let harness = try await Harness()
        do {
            var cancelled = harness.purchase(state: "SUBSCRIPTION_STATE_CANCELED", acknowledged: true)
            cancelled.lineItems![0].autoRenewingPlan?.autoRenewEnabled = false
            harness.api.setSubscription("tok-c1", cancelled)
            _ = try await Self.verify(harness, "tok-c1")
            harness.clock.advance(seconds: 3600)
            let upgradedAt = harness.clock.milliseconds
            var upgrade = harness.purchase(acknowledged: true, linked: "tok-c1", product: "pro_premium")
            upgrade.startTime = harness.iso(upgradedAt)
            upgrade.lineItems![0].latestSuccessfulOrderId = "GPA.3333-3333-3333-33333"
            harness.api.setSubscription("tok-c2", upgrade)
            // Play has not expired the old token yet when the new one is read.
            await Self.notify(harness, 4, "tok-c2", id: "m-upgrade")
            let old = try #require(try await harness.ledger.subscription(harness.key("tok-c1")))
            let new = try #require(try await harness.ledger.subscription(harness.key("tok-c2")))
            #expect(old.periods.last?.endMilliseconds == upgradedAt)
            #expect(new.periods.first?.startMilliseconds == upgradedAt)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("a base plan with an add-on records a period per line item")
    func addOn() async throws {
        let harness = try await Harness()
        do {
            var purchase = harness.purchase(acknowledged: true)
            var addOn = purchase.lineItems![0]
            addOn.productId = "extra_storage"
            purchase.lineItems!.append(addOn)
            harness.api.setSubscription("tok-e", purchase)
            _ = try await Self.verify(harness, "tok-e")
            let state = try #require(try await harness.ledger.subscription(harness.key("tok-e")))
            #expect(Set(state.periods.map(\.productID)) == ["pro_monthly", "extra_storage"])
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("a one-time product notification reads products.get, also for a product nobody configured")
    func unconfiguredOneTime() async throws {
        let harness = try await Harness()
        do {
            var gems = ProductPurchase()
            gems.purchaseState = 0
            gems.purchaseTimeMillis = String(harness.clock.milliseconds)
            gems.orderId = "GPA.0000-0000-0000-00077"
            harness.api.setProduct("gems-tok", gems)
            _ = try await harness.ledger.recordNotification(
                RecordNotificationRequest(
                    entry: InboxEntry(
                        store: .google, environment: .production, notificationID: "m-gems",
                        notificationType: "ONE_TIME_PRODUCT_PURCHASED", rawPayload: "{}")))
            await harness.adapter.process(
                messageID: "m-gems", packageName: GoogleAdapterTests.package, eventTime: harness.clock.milliseconds,
                work: .oneTimeProduct(type: 1, token: "gems-tok", productID: "gems"))
            let state = try #require(try await harness.ledger.subscription(harness.key("gems-tok")))
            #expect(state.productKind == .nonConsumable && state.productID == "gems")
            #expect(!harness.api.calls.contains { $0.hasPrefix("get ") })
            let inbox = try await harness.ledger.listInbox(ListInboxRequest(status: .processed, store: .google))
            #expect(inbox.entries.first { $0.notificationID == "m-gems" }?.status == .processed)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    @Test("after an outage of 40 days the voided purchases window starts 30 days back, and the cursor moves on")
    func voidedWindow() async throws {
        let harness = try await Harness()
        do {
            let now = harness.clock.milliseconds
            _ = try await harness.ledger.advanceCursor(
                "google-voided-\(GoogleAdapterTests.package)", to: now - 40 * Self.day)
            await GoogleReconciler(adapter: harness.adapter, interval: .zero).runPass()
            #expect(harness.api.voidedWindows == [(now - 30 * Self.day + 600_000)...now])
            let cursor = try await harness.ledger.cursor("google-voided-\(GoogleAdapterTests.package)")
            #expect(cursor.value == now)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }
}
