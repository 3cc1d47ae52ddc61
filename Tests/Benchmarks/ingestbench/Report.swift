import BenchSupport
import Foundation

/// The figures beside the floor, then one JSON line.
enum Report {
    static let services = ["verifier", "ledger", "entitlement"]

    static func print(figures: [StoreFigures], floor: Floor, costs: ExchangeCosts, options: Options) {
        let n = options.subscriptions
        Swift.print(
            "renewal wave, \(n) subscriptions per store, \(options.concurrency) in flight, \(options.postgres ? "PostgreSQL" : "SQLite"), event log to one webhook"
        )
        var json: [String: Any] = [:]
        for figure in figures {
            let ours = 1 / figure.rate
            Swift.print("\n\(figure.store)")
            var rows: [[String]] = [
                ["end to end (post → webhook acknowledged)", ReportText.fixed(figure.rate, 0), "notifications/s"],
                ["accepted by the verifier", ReportText.fixed(figure.acceptedRate, 0), "notifications/s"],
                ["refused (503, posted again after Retry-After)", "\(figure.rejected)", ""],
            ]
            for service in services + ["storesim"] {
                let label = service == "storesim" ? "CPU storesim (apart, excluded)" : "CPU \(service)"
                rows.append([
                    label, ReportText.fixed((figure.cpuPerNotification[service] ?? 0) * 1e6, 0), "µs/notification",
                ])
            }
            let serviceCPU = services.map { figure.cpuPerNotification[$0] ?? 0 }.reduce(0, +)
            rows.append(["CPU of the three services", ReportText.fixed(serviceCPU * 1e6, 0), "µs/notification"])
            rows.append([
                "floor (verifies + one append)", ReportText.fixed(figure.floorSeconds * 1e6, 0), "µs/notification",
            ])
            rows.append([
                "floor / ours (wall time per notification)", ReportText.fixed(figure.floorSeconds / ours, 3), "",
            ])
            rows.append([
                "floor / ours (service CPU per notification)", ReportText.fixed(figure.floorSeconds / serviceCPU, 3),
                "",
            ])
            let shape = ShapeFloor(floor: figure.floorSeconds, store: figure.store, costs: costs)
            rows.append([
                "shape floor (+ \(shape.framed) framed, \(shape.httpServed + shape.httpPosted) HTTP exchanges)",
                ReportText.fixed(shape.seconds * 1e6, 0), "µs/notification",
            ])
            rows.append([
                "highest floor / ours the shape allows", ReportText.fixed(figure.floorSeconds / shape.seconds, 3), "",
            ])
            rows.append(["shape floor / ours (service CPU)", ReportText.fixed(shape.seconds / serviceCPU, 3), ""])
            Swift.print(ReportText.table(rows))
            for (path, calls) in figure.apiCalls.sorted(by: { $0.key < $1.key }) {
                Swift.print("  store API \(ReportText.fixed(calls, 2)) calls/notification: \(path)")
            }
            if figure.store == "apple" {
                Swift.print(
                    "  floor with each chain verified again: \(ReportText.fixed(floor.appleChainSeconds * 1e6, 0)) µs/notification, floor / ours (wall) \(ReportText.fixed(floor.appleChainSeconds / ours, 3))"
                )
            }
            let check = figure.checkLatency
            let hook = figure.webhookLatency
            Swift.print(
                "  at \(ReportText.fixed(figure.openRate, 0))/s open loop (\(check.count) notifications): post → CheckAccess new period p50 \(ms(percentile(check, 0.5))) p99 \(ms(percentile(check, 0.99))) max \(ms(check.last ?? 0)) ms; post → webhook p50 \(ms(percentile(hook, 0.5))) p99 \(ms(percentile(hook, 0.99))) max \(ms(hook.last ?? 0)) ms"
            )
            var entry: [String: Any] = [
                "notifications_per_second": Int(figure.rate), "accepted_per_second": Int(figure.acceptedRate),
                "refused": figure.rejected, "open_loop_rate": Int(figure.openRate),
                "check_p50_ms": percentile(check, 0.5), "check_p99_ms": percentile(check, 0.99),
                "check_max_ms": check.last ?? 0, "webhook_p50_ms": percentile(hook, 0.5),
                "webhook_p99_ms": percentile(hook, 0.99), "webhook_max_ms": hook.last ?? 0,
                "floor_us": figure.floorSeconds * 1e6, "floor_over_ours": figure.floorSeconds / ours,
                "api_calls_per_notification": figure.apiCalls,
                "shape_floor_us": shape.seconds * 1e6,
                "shape_allows_floor_over_ours": figure.floorSeconds / shape.seconds,
                "shape_floor_over_ours": shape.seconds / serviceCPU,
            ]
            for (name, value) in figure.cpuPerNotification { entry["cpu_us_\(name)"] = value * 1e6 }
            let overload = Overload.report(figure.overload)
            for line in overload.lines { Swift.print(line) }
            entry["overload"] = overload.json
            json[figure.store] = entry
        }
        Swift.print(
            "\nfloor: openssl speed verify/s P-256 \(ReportText.grouped(floor.p256VerifyPerSecond)), P-384 \(ReportText.grouped(floor.p384VerifyPerSecond)), RSA-2048 \(ReportText.grouped(floor.rsa2048VerifyPerSecond)); \(floor.appendReference) \(ReportText.fixed(floor.appendSeconds * 1e6, 0)) µs/row"
        )
        Swift.print(
            "  App Store: 3 JWS × 1 P-256 (chains verified once and kept; each again: + 6 P-384) + 1 append; Play: 1 RS256 token + 1 append"
        )
        Swift.print(
            "exchanges at their reference's cost: framed (redis-benchmark GET, both ends) \(ReportText.fixed(costs.framedSeconds * 1e6, 1)) µs; HTTP POST served (nginx) \(ReportText.fixed(costs.httpServerSeconds * 1e6, 1)) µs, posted (wrk) \(ReportText.fixed(costs.httpClientSeconds * 1e6, 1)) µs"
        )
        json["framed_exchange_us"] = costs.framedSeconds * 1e6
        json["http_served_us"] = costs.httpServerSeconds * 1e6
        json["http_posted_us"] = costs.httpClientSeconds * 1e6
        json["subscriptions"] = n
        json["p256_verify_per_second"] = Int(floor.p256VerifyPerSecond)
        json["p384_verify_per_second"] = Int(floor.p384VerifyPerSecond)
        json["rsa2048_verify_per_second"] = Int(floor.rsa2048VerifyPerSecond)
        json["append_us"] = floor.appendSeconds * 1e6
        json["ledger_store"] = options.postgres ? "postgres" : "sqlite"
        json["apple_floor_with_chains_us"] = floor.appleChainSeconds * 1e6
        let data = (try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])) ?? Data()
        Swift.print(String(decoding: data, as: UTF8.self))
    }

    static func ms(_ value: Double) -> String { ReportText.fixed(value, 1) }
}
