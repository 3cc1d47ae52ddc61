import Foundation
import ServiceProcessKit
import TestSupport
import Testing

@testable import StoreSimKit

/// `docs/simulator.md` held to the simulator: the defaults its settings table names are the
/// launcher's, its product table is the default catalogue of both stores, its fixed values are
/// the stores' configuration, and its file table is what `storesim` writes into `STORESIM_DIR`.
@Suite("Docs: the simulator's defaults and files")
struct SimulatorDocsTests {
    static func page() throws -> ManualPage { try ManualPage("docs/simulator.md") }

    /// A default as the settings table writes it: the value in backticks, or `none`.
    static func written(_ value: (some CustomStringConvertible)?) -> String { value.map { "`\($0)`" } ?? "none" }

    /// A duration as `STORESIM_APPLE_RENEWAL_LEAD` takes it: whole hours, minutes or seconds.
    static func duration(milliseconds: Int64) -> String {
        for (unit, size) in [("h", Int64(3_600_000)), ("m", 60_000), ("s", 1000)] where milliseconds % size == 0 {
            return milliseconds == 0 ? "0" : "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }

    /// A period as the product table writes it.
    static func period(_ period: AppleSimProduct.Period) -> String {
        switch period {
        case .days(let count): count == 1 ? "1 day" : "\(count) days"
        case .months(let count): count == 1 ? "1 month" : "\(count) months"
        case .years(let count): count == 1 ? "1 year" : "\(count) years"
        }
    }

    @Test("every default in the settings table is the launcher's, and every setting is in it")
    func settingsDefaults() throws {
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let settings = try StoreSimLauncher.Settings([:])
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        let products = "[the products below](#default-products)"
        let expected: [String: String] = [
            "STORESIM_LISTEN": "`\(settings.host):\(settings.port)`",
            "STORESIM_CONTROL_LISTEN": "`\(settings.host):\(settings.controlPort)`",
            "STORESIM_DIR": Self.written(settings.directory),
            "STORESIM_START": "now",
            "STORESIM_APPLE_BUNDLE_ID": Self.written(settings.bundleID),
            "STORESIM_APPLE_APP_ID": Self.written(settings.appAppleID),
            "STORESIM_APPLE_PRODUCTS": products,
            "STORESIM_APPLE_ONE_TIME_PRODUCTS": products,
            "STORESIM_APPLE_GRACE_DAYS": Self.written(settings.graceDays ?? 0),
            "STORESIM_APPLE_RENEWAL_LEAD": Self.written(Self.duration(milliseconds: settings.renewalLead)),
            "STORESIM_APPLE_SEED": Self.written(settings.seed),
            "STORESIM_APPLE_HISTORY_PAGE_SIZE": Self.written(settings.historyPageSize),
            "STORESIM_APPLE_NOTIFICATION_URL": Self.written(settings.notificationURL?.absoluteString),
            "STORESIM_GOOGLE_PACKAGE": Self.written(settings.packageName),
            "STORESIM_GOOGLE_PRODUCTS": products,
            "STORESIM_GOOGLE_ONE_TIME_PRODUCTS": products,
            "STORESIM_GOOGLE_GRACE_DAYS": Self.written(settings.googleGraceDays),
            "STORESIM_GOOGLE_HOLD_DAYS": Self.written(settings.googleHoldDays),
            "STORESIM_GOOGLE_TEST_PURCHASES": Self.written(settings.googleTestPurchases),
            "STORESIM_GOOGLE_PUSH_URL": Self.written(settings.pushURL?.absoluteString),
            "STORESIM_APPLE_RECORDED": Self.written(settings.recordedApple),
            "STORESIM_APPLE_RECORDED_ROOTS": Self.written(settings.recordedRoots),
            "STORESIM_GOOGLE_RECORDED": Self.written(settings.recordedGoogle),
        ]
        // "now": the clock starts at the wall clock's time.
        #expect((before...after).contains(settings.start))
        let rows = try #require(try Self.page().table(with: ["setting", "default", "what it is"]))
        var documented: [String: String] = [:]
        for row in rows {
            let name = try #require(ManualPage.codeSpans(row["setting"] ?? "").first, "\(row)")
            #expect(documented[name] == nil, "\(name) is in the table twice")
            documented[name] = row["default"]
        }
        for (name, value) in documented {
            #expect(expected[name] != nil, "\(name) is no setting of the simulator")
            if let want = expected[name] { #expect(value == want, "\(name)") }
        }
        for name in expected.keys where documented[name] == nil {
            Issue.record("the settings table does not name \(name)")
        }
        // And the launcher reads every one of them: a value for each changes the settings.
        let launcher = try String(
            contentsOf: ManualPage.root.appendingPathComponent("Tests/StoreSim/StoreSimKit/StoreSimLauncher.swift"),
            encoding: .utf8)
        for name in expected.keys { #expect(launcher.contains("\"\(name)\""), "\(name)") }
    }

    @Test("the product table is the default catalogue of both stores")
    func defaultProducts() throws {
        let settings = try StoreSimLauncher.Settings([:])
        let kinds: [AppleSimOneTimeProduct.Kind: String] = [
            .consumable: "consumable", .nonConsumable: "non-consumable", .nonRenewingSubscription: "non-renewing",
        ]
        var expected: [[String: String]] = []
        for product in settings.products {
            expected.append([
                "store": "App Store", "product": "`\(product.id)`", "kind": "auto-renewable",
                "period": Self.period(product.period), "group and level": "`\(product.group)`, level \(product.level)",
                "price": "`\(product.price)`",
            ])
        }
        for product in settings.oneTimeProducts {
            expected.append([
                "store": "App Store", "product": "`\(product.id)`", "kind": kinds[product.kind]!, "period": "—",
                "group and level": "—", "price": "`\(product.price)`",
            ])
        }
        for product in settings.googleProducts {
            expected.append([
                "store": "Google Play", "product": "`\(product.id)`",
                "kind": "subscription, base plan `\(product.basePlanID)`" + (product.prepaid ? ", prepaid" : ""),
                "period": Self.period(product.period), "group and level": "—", "price": "—",
            ])
        }
        for product in settings.googleOneTimeProducts {
            expected.append([
                "store": "Google Play", "product": "`\(product.id)`", "kind": "one-time", "period": "—",
                "group and level": "—", "price": "—",
            ])
        }
        let rows = try #require(try Self.page().table(with: ["store", "product", "kind", "price"]))
        #expect(rows == expected)
        // The prices left out of an entry are the ones the settings table says.
        let page = try Self.page().text
        #expect(
            page.contains(
                "the price in milliunits (\(AppleSimProduct(id: "", group: "", period: .days(1), level: 1).price) when left out)"
            ))
        #expect(page.contains("(price \(AppleSimOneTimeProduct(id: "", kind: .consumable).price) when left out)"))
    }

    @Test("the fixed values the page names are the stores' configuration")
    func fixedValues() throws {
        let apple = AppleSimConfiguration(bundleID: "com.example.app", appAppleID: 1, products: [])
        let google = GoogleSimConfiguration(packageName: "com.example.app", products: [])
        let page = try Self.page().text
        #expect(
            page.contains(
                "signs for the `\(apple.environment)` environment, sells in\nstorefront `\(apple.storefront)` (`\(apple.storefrontID)`) in `\(apple.currency)`"
            ))
        #expect(page.contains("retries a failed renewal until \(apple.billingRetryDays) days after the"))
        #expect(google.acknowledgementWindowMilliseconds == 3 * 86_400_000 && page.contains("within three\ndays"))
        #expect(google.testAcknowledgementWindowMilliseconds == 5 * 60_000 && page.contains("five minutes"))
    }

    @Test("the file table is what storesim writes into STORESIM_DIR, and verifier.env names what the table says")
    func filesWritten() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storesim-docs-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storesim = try ServiceProcess("storesim", environment: ["STORESIM_DIR": directory.path])
        defer { storesim.stop() }
        _ = try await storesim.line(containing: "\"msg\":\"storesim ready\"", within: 60)
        let written = Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
        let rows = try #require(try Self.page().table(with: ["file", "what it is"]))
        let files = rows.compactMap { ManualPage.codeSpans($0["file"] ?? "").first }
        #expect(Set(files) == written && files.count == written.count)
        let settings = try ServiceFiles.environment(at: directory.appendingPathComponent("verifier.env"))
        for row in rows {
            let file = ManualPage.codeSpans(row["file"] ?? "").first ?? ""
            let names = ManualPage.codeSpans(row["what it is"] ?? "").filter { $0.first?.isUppercase == true }
                .filter { $0.allSatisfy { $0.isUppercase || $0 == "_" } }
            if file == "verifier.env" {
                #expect(Set(names) == Set(settings.keys) && names.count == settings.count, "\(names)")
            } else if file == "clock" {
                // Named by every service that follows it, not by verifier.env.
                #expect(names == ["CLOCK_FILE"], "\(row)")
                #expect(settings["CLOCK_FILE"] == nil)
            } else {
                // The setting that names the file.
                #expect(names.count == 1, "\(row)")
                #expect(settings[names.first ?? ""] == directory.appendingPathComponent(file).path, "\(file)")
            }
        }
    }
}
