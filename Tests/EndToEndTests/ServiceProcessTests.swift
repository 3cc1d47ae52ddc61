import Config
import Crypto
import Foundation
import RPC
import Sockets
import TestSupport
import Testing
import Wire

@Suite("Service executables", .timeLimit(.minutes(5)))
struct ServiceProcessTests {
    static let services: [(name: String, health: String)] = [
        ("ledger", LedgerRPC.health.name),
        ("verifier", VerifierRPC.health.name),
        ("entitlement", EntitlementRPC.health.name),
    ]

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("svc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test(
        "each executable answers Health over TCP, serves /healthz and /metrics, logs JSON lines and exits 0 on SIGTERM",
        arguments: [0, 1, 2])
    func serviceLifecycle(index: Int) async throws {
        let (name, healthMethod) = Self.services[index]
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ServiceProcess(name, directory: directory)
        let rpcPort = try await process.rpcPort()
        let httpPort = try await process.httpPort()

        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: rpcPort)])
        let health = try await client.call(healthMethod, HealthRequest(), as: HealthResponse.self)
        #expect(health.service == name)
        #expect(health.status == .serving)
        #expect(health.version == "0.1.0")

        let (status, body) = try await httpGet(port: httpPort, path: "/healthz")
        #expect(status == 200)
        #expect(body == "ok \(name)\n")
        let (metricsStatus, metrics) = try await httpGet(port: httpPort, path: "/metrics")
        #expect(metricsStatus == 200)
        #expect(metrics.contains("rpc_server_calls_total{code=\"OK\",method=\"\(healthMethod)\"} 1\n"))
        #expect(metrics.contains("# TYPE rpc_server_call_duration_seconds histogram\n"))
        #expect(metrics.contains("rpc_server_connections 1\n"))

        client.shutdown()
        process.terminate()
        #expect(await process.waitForExit() == 0)
        for line in process.log {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["service"] as? String == name, "\(line)")
        }
        #expect(process.log.last?.contains("\"msg\":\"stopped\"") == true)
    }

    @Test("the ledger opens its SQLite file in WAL mode and is ready")
    func ledgerDatabase() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ServiceProcess("ledger", directory: directory)
        let httpPort = try await process.httpPort()
        let opened = try #require(await process.line(containing: "\"msg\":\"database open\""))
        #expect(ServiceProcess.field("journal_mode", in: opened) == "wal")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("ledger.sqlite").path))
        let (status, body) = try await httpGet(port: httpPort, path: "/readyz")
        #expect(status == 200 && body == "ready\n")
        process.terminate()
        #expect(await process.waitForExit() == 0)
    }

    @Test("the verifier and the entitlement service are ready once the ledger answers, and not before")
    func readinessFollowsTheLedger() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ledger = try ServiceProcess("ledger", directory: directory)
        let ledgerPort = try await ledger.rpcPort()
        for name in ["verifier", "entitlement"] {
            let process = try ServiceProcess(name, environment: ["LEDGER_ADDR": "127.0.0.1:\(ledgerPort)"])
            let httpPort = try await process.httpPort()
            _ = try #require(await process.line(containing: "\"msg\":\"dependency available\""))
            if name == "entitlement" {
                // Its readiness also waits for the first snapshot of the ledger.
                _ = try #require(await process.line(containing: "\"msg\":\"snapshot loaded\""))
            }
            let (status, _) = try await httpGet(port: httpPort, path: "/readyz")
            #expect(status == 200)
            process.terminate()
            #expect(await process.waitForExit() == 0)
        }
        ledger.terminate()
        #expect(await ledger.waitForExit() == 0)
        // With the ledger gone each starts but is not ready, and says why: the entitlement
        // service also lacks its first snapshot.
        for (name, reasons) in [("verifier", "ledger"), ("entitlement", "ledger, snapshot")] {
            let orphan = try ServiceProcess(name, environment: ["LEDGER_ADDR": "127.0.0.1:\(ledgerPort)"])
            let httpPort = try await orphan.httpPort()
            _ = try #require(await orphan.line(containing: "\"part\":\"ledger\""))
            let (status, body) = try await httpGet(port: httpPort, path: "/readyz")
            #expect(status == 503, "\(name)")
            #expect(body == "not ready: \(reasons)\n", "\(name)")
            orphan.terminate()
            #expect(await orphan.waitForExit() == 0, "\(name)")
        }
    }

    @Test(
        "a bad setting stops the start with exit status 2 and a message naming the variable",
        arguments: [
            ("RPC_THREADS", "zero", "RPC_THREADS: expected an integer, got \"zero\""),
            ("RPC_LISTEN", "localhost", "RPC_LISTEN: expected host:port with a port 0...65535, got \"localhost\""),
            (
                "RPC_READ_TIMEOUT", "soon",
                "RPC_READ_TIMEOUT: expected a duration such as 250ms, 30s, 5m or 1h, got \"soon\""
            ),
            (
                "TLS_CERT", "/nonexistent/cert.pem",
                "TLS_CERT: file /nonexistent/cert.pem does not exist or cannot be read"
            ),
            (
                "RPC_ALLOW", "*=*",
                "RPC_ALLOW: needs mutual TLS (TLS_CERT, TLS_KEY, TLS_CA): plaintext callers have no identity"
            ),
            (
                "RPC_READ_ONLY", "support",
                "RPC_READ_ONLY: needs mutual TLS (TLS_CERT, TLS_KEY, TLS_CA): plaintext callers have no identity"
            ),
        ])
    func badConfiguration(variable: String, value: String, message: String) async throws {
        let process = try ServiceProcess(
            "ledger", environment: [variable: value], directory: try Self.temporaryDirectory())
        #expect(await process.waitForExit() == 2)
        #expect(process.log == ["ledger: configuration error: \(message)"])
    }

    @Test(
        "a checkpoint path outside a writable folder, or a bad interval, stops the entitlement service with exit status 2",
        arguments: [
            (
                "VIEW_CHECKPOINT_PATH", "/nonexistent/view.checkpoint",
                "VIEW_CHECKPOINT_PATH: /nonexistent/view.checkpoint is not a file path in a folder this process can write"
            ),
            (
                "VIEW_CHECKPOINT_PATH", "/tmp/",
                "VIEW_CHECKPOINT_PATH: /tmp/ is not a file path in a folder this process can write"
            ),
            ("VIEW_CHECKPOINT_INTERVAL_SECONDS", "0", "VIEW_CHECKPOINT_INTERVAL_SECONDS: 0 is out of range 1...86400"),
        ])
    func badCheckpointConfiguration(variable: String, value: String, message: String) async throws {
        var environment = ["LEDGER_ADDR": "127.0.0.1:1", variable: value]
        if variable != "VIEW_CHECKPOINT_PATH" { environment["VIEW_CHECKPOINT_PATH"] = "/tmp/unused.checkpoint" }
        let process = try ServiceProcess(
            "entitlement", environment: environment, directory: try Self.temporaryDirectory())
        #expect(await process.waitForExit() == 2)
        #expect(process.log.last == "entitlement: configuration error: \(message)")
    }

    @Test("SIGTERM with calls in flight: every call gets its answer before the process exits 0")
    func drainOnSigterm() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ServiceProcess("ledger", directory: directory)
        let port = try await process.rpcPort()
        let client = try RPCClient(endpoints: [HostPort(host: "127.0.0.1", port: port)])
        let outcomes = await withTaskGroup(of: StatusCode.self) { group in
            for _ in 0..<300 {
                group.addTask {
                    do {
                        _ = try await client.call(Self.services[0].health, HealthRequest(), as: HealthResponse.self)
                        return .ok
                    } catch {
                        return (error as? RPCError)?.code ?? .unknown
                    }
                }
            }
            process.terminate()
            var codes: [StatusCode] = []
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(outcomes.count == 300)
        // Calls the server read before the signal succeed; later ones are refused or find it gone.
        #expect(
            outcomes.allSatisfy { $0 == .ok || $0 == .unavailable },
            "\(Dictionary(grouping: outcomes, by: \.name).mapValues(\.count))")
        #expect(await process.waitForExit() == 0)
    }
}

@Suite("Service executables with mutual TLS", .timeLimit(.minutes(5)))
struct ServiceTLSProcessTests {
    /// A ledger started with mutual TLS and `environment` besides, its certificates and the
    /// clients' from one CA in `directory` (the ledger's and one for each of `clients`), and a
    /// client for one of them.
    struct TLSLedger {
        let process: ServiceProcess
        let pki: TestPKIFiles
        let port: Int

        init(_ environment: [String: String], clients: [String], directory: URL) async throws {
            let now = Date()
            let year = now.addingTimeInterval(365 * 86400)
            let pki = try TestPKI.write(
                to: directory.appendingPathComponent("pki").path, caName: "Deployment CA",
                identities: [("ledger", now, year)] + clients.map { ($0, now, year) })
            process = try ServiceProcess(
                "ledger",
                environment: [
                    "TLS_CERT": pki["ledger"]!.certificatePath, "TLS_KEY": pki["ledger"]!.keyPath,
                    "TLS_CA": pki.caCertificatePath,
                ].merging(environment) { _, given in given }, directory: directory)
            self.pki = pki
            port = try await process.rpcPort()
        }

        func client(_ name: String) throws -> RPCClient {
            try RPCClient(
                endpoints: [HostPort(host: "127.0.0.1", port: port)],
                tls: TLSConfiguration(
                    certificatePath: pki[name]!.certificatePath, keyPath: pki[name]!.keyPath,
                    caPath: pki.caCertificatePath))
        }
    }

    @Test("TLS_CERT, TLS_KEY, TLS_CA and RPC_ALLOW switch on mutual TLS with per-method rules")
    func mutualTLSFromEnvironment() async throws {
        let directory = try ServiceProcessTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tls = try await TLSLedger(
            ["RPC_ALLOW": "Ledger/Health=verifier"], clients: ["verifier", "search"], directory: directory)
        let ledger = tls.process
        let method = ServiceProcessTests.services[0].health
        let health = try await tls.client("verifier").call(method, HealthRequest(), as: HealthResponse.self)
        #expect(health.service == "ledger")
        await #expect(throws: RPCError(.permissionDenied, "search may not call \(method)")) {
            _ = try await tls.client("search").call(method, HealthRequest(), as: HealthResponse.self)
        }
        let listening = try #require(await ledger.line(containing: "\"msg\":\"rpc server listening\""))
        #expect(ServiceProcess.field("tls", in: listening) == "mutual")
        ledger.terminate()
        #expect(await ledger.waitForExit() == 0)
    }

    @Test("RPC_READ_ONLY: its identities may call only what changes nothing, see redacted answers, and Health says so")
    func readOnlyRole() async throws {
        let directory = try ServiceProcessTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tls = try await TLSLedger(
            ["RPC_READ_ONLY": "support"], clients: ["operator", "support"], directory: directory)
        let ledger = tls.process
        let support = try tls.client("support")
        let operator_ = try tls.client("operator")
        #expect(try await support.call(LedgerRPC.health, HealthRequest()).callerReadOnly)
        #expect(try await !operator_.call(LedgerRPC.health, HealthRequest()).callerReadOnly)
        let grant = GrantEntitlementRequest(idempotencyKey: "grant-1", accountID: "account-1", capability: "pro")
        await #expect(
            throws: RPCError(
                .permissionDenied,
                "support has the read-only role (RPC_READ_ONLY) and may not call \(LedgerRPC.grantEntitlement.name)")
        ) {
            _ = try await support.call(LedgerRPC.grantEntitlement, grant)
        }
        _ = try await operator_.call(LedgerRPC.grantEntitlement, grant)
        let account = try await operator_.call(LedgerRPC.getAccount, GetAccountRequest(accountID: "account-1"))
        #expect(account.subscriptions.count == 1)
        let seen = try await support.call(LedgerRPC.getAccount, GetAccountRequest(accountID: "account-1"))
        #expect(seen == account.redacted())
        #expect(seen != account, "the grant's id is a store id, cut to its last 4 characters")
        ledger.terminate()
        #expect(await ledger.waitForExit() == 0)
    }
}
