import Observability

/// One store's reconciliation families on the verifier's `/metrics` page:
/// `reconciliation_passes_total{outcome}`, `reconciliation_subscriptions_refreshed_total`,
/// `reconciliation_changes_found_total` and `reconciliation_transactions_discovered_total`,
/// each labelled `store`; and, for Google Play, `reconciliation_voided_purchases_found_total`.
struct ReconciliationMetrics: Sendable {
    let completed: Counter
    let failed: Counter
    /// Subscriptions a pass refreshed from the store's API.
    let refreshed: Counter
    /// Refreshes that changed the recorded state: a notification should have said so.
    let changesFound: Counter
    /// Transactions or purchases no delivered notification announced (App Store: notifications
    /// found only in the notification history; Google Play: voided purchases found only in the
    /// voided purchases list).
    let discovered: Counter
    /// Voided purchases the voided purchases list gave that the ledger had not applied yet.
    let voidedFound: Counter

    init(store: String, registry: MetricsRegistry?) {
        func counter(_ name: String, _ help: String, _ labels: Labels) -> Counter {
            registry?.counter(name, help: help, labels: labels) ?? Counter()
        }
        let passes = "Reconciliation passes, by whether every step of the pass completed."
        completed = counter("reconciliation_passes_total", passes, ["store": store, "outcome": "completed"])
        failed = counter("reconciliation_passes_total", passes, ["store": store, "outcome": "failed"])
        refreshed = counter(
            "reconciliation_subscriptions_refreshed_total", "Subscriptions reconciliation refreshed from the store.",
            ["store": store])
        changesFound = counter(
            "reconciliation_changes_found_total", "Reconciliation refreshes that changed the recorded state.",
            ["store": store])
        discovered = counter(
            "reconciliation_transactions_discovered_total",
            "Transactions or purchases reconciliation found that no delivered notification announced.",
            ["store": store])
        voidedFound =
            store == "google"
            ? counter(
                "reconciliation_voided_purchases_found_total",
                "Voided purchases from Google's voided purchases list that the ledger had not applied.", [:])
            : Counter()
    }

    /// Counts a pass; `completed` when no step of it failed.
    func pass(completed ok: Bool) { (ok ? completed : failed).increment() }

    /// Counts a refresh; `changed` when it changed the recorded state.
    func refreshed(changed: Bool) {
        refreshed.increment()
        if changed { changesFound.increment() }
    }
}
