import Foundation
import Model
import RPC
import TestSupport
import Testing
import Wire

/// The lifecycle edges and the failure modes, through the whole system and the store simulator:
/// billing retry to expiry, plan changes, family sharing, restores under each transfer policy,
/// duplicated, reordered and lost notifications, a store API outage and a ledger crash. Each
/// scenario checks `CheckAccess` at its steps and the account's audit trail in the ledger (the
/// ledger crash also the event log).
@Suite("End to end: lifecycle edges and failures")
struct StoreSimScenarioTests {
    @Test(
        "App Store: a failed payment keeps access through grace, loses it in billing retry, and expires after 60 days")
    func billingRetryToExpiry() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("apple/fail-payment", ["transactionId": original])
            try await stack.control("clock/advance", ["by": "+32d"])
            _ = try await stack.eventually(account, "the grace period") {
                $0.allowed && $0.grant?.state == .gracePeriod
            }
            try await stack.control("clock/advance", ["by": "+16d"])
            let retry = try await stack.eventually(account, "billing retry") {
                !$0.allowed && $0.grant?.state == .billingRetry
            }
            #expect(retry.reason == .stateDenies)
            try await stack.control("clock/advance", ["by": "+60d"])
            let expired = try await stack.eventually(account, "the expiry") { $0.grant?.state == .expired }
            #expect(!expired.allowed && expired.reason == .expired)
            _ = try await stack.eventuallyInHistory(of: account, "grace, billing retry and expiry") {
                $0.contains("DID_FAIL_TO_RENEW") && $0.contains("GRACE_PERIOD_EXPIRED") && $0.last == "EXPIRED"
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("App Store: an upgrade takes effect at once, a downgrade only at the next renewal")
    func upgradeAndDowngrade() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("clock/advance", ["by": "+10d"])
            try await stack.control(
                "apple/change-product", ["transactionId": original, "productId": "com.example.premium.monthly"])
            let upgraded = try await stack.eventually(account, "the upgrade") {
                $0.allowed && $0.grant?.productID == "com.example.premium.monthly"
            }
            try await stack.control(
                "apple/change-product", ["transactionId": original, "productId": "com.example.pro.monthly"])
            try await stack.control("clock/advance", ["by": "+1d"])
            // Still premium today, once everything the change sent is in: the downgrade waits
            // for the renewal.
            try await stack.settle()
            let now = try await stack.simNow()
            let today = try await stack.check(account, at: now)
            #expect(today.grant?.productID == "com.example.premium.monthly")
            try await stack.control("clock/advance", ["by": "+31d"])
            let downgraded = try await stack.eventually(account, "the downgrade at renewal") {
                $0.allowed && $0.grant?.productID == "com.example.pro.monthly"
            }
            #expect((downgraded.untilMilliseconds ?? 0) > (upgraded.untilMilliseconds ?? .max))
            _ = try await stack.eventuallyInHistory(of: account, "both plan changes and the renewal") {
                $0.filter { $0 == "DID_CHANGE_RENEWAL_PREF" }.count == 2 && $0.contains("DID_RENEW")
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("App Store: family-shared access is granted, then ends at REVOKE")
    func familySharing() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let original = try await stack.buySharedOnAppStore(account: account)
            try await stack.revokeFamilySharing(original, of: account)
            _ = try await stack.eventuallyInHistory(of: account, "REVOKE") { $0.last == "REVOKE" }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "a restore on a second account: `transfer` moves access; `keep` and `refuse` leave it with the first",
        arguments: ["apple", "google"], ["transfer", "keep", "refuse"])
    func restoreUnderEachPolicy(_ store: String, _ policy: String) async throws {
        let stack = try await StoreSimStack(ledger: ["LEDGER_TRANSFER_POLICY": policy])
        do {
            let first = "phone-one-\(UUID().uuidString.prefix(8))"
            let second = "phone-two-\(UUID().uuidString.prefix(8))"
            // Bought without an appAccountToken or obfuscated account id: only the links say
            // whose it is.
            let apple = store == "apple"
            let bought = try await stack.control(
                "\(store)/buy", ["productId": apple ? "com.example.pro.monthly" : "pro_sub"])
            let id = try #require(bought[apple ? "originalTransactionId" : "purchaseToken"] as? String)
            func present(_ account: String, _ key: String) -> RestorePurchasesRequest {
                apple
                    ? RestorePurchasesRequest(accountID: account, appleTransactionIDs: [id], idempotencyKey: key)
                    : RestorePurchasesRequest(
                        accountID: account,
                        googlePurchases: [
                            .init(packageName: "com.example.app", productID: "pro_sub", purchaseToken: id)
                        ],
                        idempotencyKey: key)
            }
            let _: RestorePurchasesResponse = try await stack.verifierClient.call(
                VerifierRPC.restorePurchases.name, present(first, "first"))
            _ = try await stack.eventually(first, "the purchase") { $0.allowed }
            let outcome: Result<RestorePurchasesResponse, RPCError>
            do {
                outcome = .success(
                    try await stack.verifierClient.call(
                        VerifierRPC.restorePurchases.name, present(second, "restore-\(policy)")))
            } catch {
                outcome = .failure(error)
            }
            switch outcome {
            case .success(let restored):
                // What the second account holds afterwards: the purchase only when it moved.
                // Apple restores a list of transactions and reports what the account holds.
                #expect(restored.subscriptions.map(\.key.storeID) == (policy == "transfer" ? [id] : []))
                #expect(apple || policy == "transfer")
            case .failure(let error):
                // A Play purchase is verified one by one, so its link's refusal is the answer.
                #expect(!apple && policy != "transfer" && error.code == .permissionDenied, "\(error)")
            }
            if policy == "transfer" {
                _ = try await stack.eventually(second, "the transfer") { $0.allowed }
                _ = try await stack.eventually(first, "the first account's loss") { !$0.allowed }
                #expect(try await stack.kinds(of: second).contains(.accountTransferred))
            } else {
                try await stack.settle()
                let now = try await stack.simNow()
                #expect(try await stack.check(first, at: now).allowed)
                #expect(try await !stack.check(second, at: now).allowed)
            }
            #expect(try await stack.kinds(of: first).contains(.accountLinked))
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a notification delivered five times is recorded once; notifications out of order end in the right state")
    func duplicatesAndReordering() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("apple/faults", ["duplicate": 1, "copies": 5])
            let cancelled = try await stack.control("apple/cancel", ["transactionId": original])
            #expect((cancelled["notifications"] as? [[String: Any]])?.count == 5)
            _ = try await stack.eventually(account, "the cancellation") { $0.grant?.state == .cancelled }
            try await stack.control("apple/resubscribe", ["transactionId": original])
            _ = try await stack.eventually(account, "auto-renew back on") { $0.grant?.state == .active }
            // Two renewals in one step, delivered newest first.
            try await stack.control("apple/faults", ["reorder": true])
            try await stack.control("clock/advance", ["by": "+62d"])
            let renewed = try await stack.eventually(account, "both renewals") {
                $0.allowed && $0.untilMilliseconds == 1_775_001_600_000  // 2026-04-01
            }
            #expect(renewed.grant?.state == .active)
            // The older renewal may still be on its way once the newer one set the state.
            let history = try await stack.eventuallyInHistory(of: account, "both renewals") {
                $0.filter { $0 == "DID_RENEW" }.count == 2
            }
            #expect(history.filter { $0 == "DID_CHANGE_RENEWAL_STATUS" }.count == 2)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("a notification never delivered is recovered by reconciliation from the notification history")
    func lostNotificationReconciled() async throws {
        // The reconciler asks for the last day of history by the wall clock: the store's clock
        // starts now and is not moved.
        let stack = try await StoreSimStack(start: nil, verifier: ["APPLE_RECONCILE_INTERVAL": "1s"])
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("apple/faults", ["drop": 1])
            let dropped = try await stack.control("apple/cancel", ["transactionId": original], delivered: false)
            let attempts = dropped["notifications"] as? [[String: Any]] ?? []
            #expect(attempts.count == 1 && attempts.first?["status"] is NSNull)
            _ = try await stack.eventually(account, "the reconciled cancellation") { $0.grant?.state == .cancelled }
            _ = try await stack.eventuallyInHistory(of: account, "the cancellation") {
                $0.contains("DID_CHANGE_RENEWAL_STATUS")
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("the App Store API failing with 500s for a while loses nothing: the signed payload carries the renewal")
    func storeOutage() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = UUID().uuidString.lowercased()
            let (_, _) = try await stack.buyOnAppStore(account: account)
            let bought = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("apple/api-faults", ["count": 6, "status": 500])
            try await stack.control("clock/advance", ["by": "+31d"])
            let renewed = try await stack.eventually(account, "the renewal during the outage") {
                $0.allowed && ($0.untilMilliseconds ?? 0) > (bought.untilMilliseconds ?? .max)
            }
            #expect(renewed.untilMilliseconds == 1_772_323_200_000)  // 2026-03-01
            _ = try await stack.eventuallyInHistory(of: account, "the renewal") { $0.contains("DID_RENEW") }
            // A DID_RENEW with its renewal info and status is the whole state: recorded with no
            // App Store API call, so none of the outage's 500s was asked for.
            #expect(try await stack.control("apple/api-faults")["remaining"] as? Int == 6)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "the ledger killed and restarted mid-scenario: undelivered notifications are delivered again, nothing is lost")
    func ledgerCrash() async throws {
        let stack = try await StoreSimStack(entitlement: ["EVENT_LOG": "true", "EVENT_LOG_LEASE_MS": "3000"])
        do {
            let account = UUID().uuidString.lowercased()
            let (original, _) = try await stack.buyOnAppStore(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            // While the ledger is down the verifier cannot take notifications in.
            await stack.entitlementStack.killLedger()
            let renewal = try await stack.control("clock/advance", ["by": "+31d"], delivered: false)
            let cancel = try await stack.control("apple/cancel", ["transactionId": original], delivered: false)
            let refused = [renewal, cancel].flatMap { $0["notifications"] as? [[String: Any]] ?? [] }
            #expect(refused.count == 2 && refused.allSatisfy { !(200..<300).contains($0["status"] as? Int ?? 0) })
            try await stack.entitlementStack.restartLedger()
            // The store sends again what was not taken, as Apple retries.
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let answer = try await stack.control("apple/redeliver", delivered: false)
                let attempts = answer["notifications"] as? [[String: Any]] ?? []
                if attempts.allSatisfy({ (200..<300).contains($0["status"] as? Int ?? 0) }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let answer = try await stack.eventually(account, "the renewal and the cancellation") {
                $0.allowed && $0.grant?.state == .cancelled && $0.untilMilliseconds == 1_772_323_200_000
            }
            #expect(answer.reason == .granted)
            // The state may come from the store's API before the cancellation's own event is in.
            _ = try await stack.eventuallyInHistory(of: account, "the renewal and the cancellation") {
                $0.contains("DID_RENEW") && $0.contains("DID_CHANGE_RENEWAL_STATUS")
            }
            try await stack.entitlementStack.expectEventLogComplete()
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test(
        "Google Play: twelve renewals, cancel, expiry at period end; a re-signup through linkedPurchaseToken continues")
    func googleRenewalsCancelAndResignup() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            let bought = try await stack.eventually(account, "the purchase") { $0.allowed }
            var until = bought.untilMilliseconds ?? 0
            for renewal in 1...12 {
                try await stack.control("clock/advance", ["by": "+31d"])
                let previous = until
                let renewed = try await stack.eventually(account, "renewal \(renewal)") {
                    $0.allowed && ($0.untilMilliseconds ?? 0) > previous
                }
                until = renewed.untilMilliseconds ?? 0
            }
            try await stack.control("google/cancel", ["purchaseToken": token])
            let cancelled = try await stack.eventually(account, "the cancellation") { $0.grant?.state == .cancelled }
            #expect(cancelled.allowed && cancelled.untilMilliseconds == until)
            try await stack.control("clock/advance", ["by": "+32d"])
            _ = try await stack.eventually(account, "the expiry") { $0.grant?.state == .expired && !$0.allowed }
            let resigned = try await stack.control(
                "google/buy", ["productId": "pro_sub", "obfuscatedAccountId": account, "linkedPurchaseToken": token])
            let next = try #require(resigned["purchaseToken"] as? String)
            let _: VerifyPurchaseResponse = try await stack.verifierClient.call(
                VerifierRPC.verifyGooglePurchase.name,
                VerifyGooglePurchaseRequest(
                    accountID: account, packageName: "com.example.app", productID: "pro_sub", purchaseToken: next,
                    idempotencyKey: "resignup"))
            _ = try await stack.eventually(account, "the re-signup") { $0.allowed && $0.grant?.key?.storeID == next }
            _ = try await stack.eventuallyKinds(of: account, "twelve renewals, the cancellation and the expiry") {
                $0.filter { $0 == .renewed }.count == 12 && $0.contains(.renewalDisabled) && $0.contains(.expired)
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    @Test("Google Play: account hold that is never recovered ends in expiry")
    func googleHoldToExpiry() async throws {
        let stack = try await StoreSimStack()
        do {
            let account = "user-\(UUID().uuidString.prefix(8))"
            let (token, _) = try await stack.buyOnPlay(account: account)
            _ = try await stack.eventually(account, "the purchase") { $0.allowed }
            try await stack.control("google/fail-payment", ["purchaseToken": token])
            try await stack.control("clock/advance", ["by": "+32d"])
            _ = try await stack.eventually(account, "the grace period") {
                $0.allowed && $0.grant?.state == .gracePeriod
            }
            try await stack.control("clock/advance", ["by": "+8d"])
            _ = try await stack.eventually(account, "the hold") { !$0.allowed && $0.grant?.state == .accountHold }
            try await stack.control("clock/advance", ["by": "+31d"])
            let expired = try await stack.eventually(account, "the expiry") { $0.grant?.state == .expired }
            #expect(!expired.allowed)
            _ = try await stack.eventuallyKinds(of: account, "grace, hold and expiry") {
                $0.contains(.gracePeriodStarted) && $0.contains(.accountHold) && $0.last == .expired
            }
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
