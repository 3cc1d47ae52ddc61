import Connect
import Crypto
import EntitlementService
import Foundation
import Glibc
import LedgerService
import ProtoJSON
import RPC
import TestSupport
import Testing
import VerifierService
import Wire

@Suite("The services' methods over HTTP (Connect)", .serialized)
struct HTTPAPITests {
    @Test("every unary method of the three services answers over HTTP as over the RPC, in JSON and in protobuf")
    func everyMethodBothEncodings() async throws {
        let stack = try await StoreSimStack()
        let services: [(String, Int, RPCClient)] = [
            ("subscriptions.verifier.v1.Verifier", try await stack.verifier.httpPort(), stack.verifierClient),
            (
                "subscriptions.ledger.v1.Ledger", try await stack.entitlementStack.ledger.httpPort(),
                stack.entitlementStack.ledgerClient
            ),
            ("subscriptions.entitlement.v1.Entitlement", stack.entitlementHTTP, stack.entitlementClient),
        ]
        var compared = 0
        for (serviceName, port, client) in services {
            let service = try #require(ProtoSchema.services.first { $0.fullName == serviceName })
            for method in service.methods where !method.isServerStreaming {
                let name = "\(serviceName)/\(method.name)"
                // The empty request: refused by most methods, answered by the reads.
                let overRPC: Result<[UInt8], RPCError>
                do throws(RPCError) {
                    overRPC = .success(try await client.unary(name, request: []))
                } catch {
                    overRPC = .failure(error)
                }
                let proto = try await connectCall(port: port, method: name, body: [], contentType: "application/proto")
                let json = try await connectCall(port: port, method: name, body: Array("{}".utf8))
                switch overRPC {
                case .success(let bytes):
                    #expect(proto.status == 200 && json.status == 200, "\(name)")
                    #expect(proto.contentType == "application/proto" && json.contentType == "application/json")
                    // Health carries the clock and the uptime, and each test event is a new one
                    // (its own id, time and place in the log); the others are the same bytes.
                    switch method.name {
                    case "Health":
                        #expect(json.text.contains(#""status":"SERVING_STATUS_SERVING""#), "\(json.text)")
                    case "LogTestEvent":
                        let events = try [bytes, proto.body].map { try Event(serialized: $0) }
                        #expect(events.allSatisfy { $0.type == "test" && $0.id.hasPrefix("evt_test_") })
                        #expect(Set(events.map(\.id)).count == 2 && events[1].sequence == events[0].sequence + 1)
                        #expect(json.text.contains(#""type":"test""#), "\(json.text)")
                    default:
                        #expect(proto.body == bytes, "\(name)")
                        #expect(
                            json.text
                                == (try ProtoJSON.decodeToJSON(
                                    bytes, as: method.output, pretty: false, defaults: .boolsAndLists)),
                            "\(name)")
                    }
                case .failure(let error):
                    for answer in [proto, json] {
                        #expect(answer.status == error.code.connectHTTPStatus, "\(name): \(answer.text)")
                        #expect(answer.contentType == "application/json")
                        let fields = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: String]
                        #expect(fields == ["code": error.code.connectName, "message": error.message], "\(name)")
                    }
                }
                compared += 1
            }
        }
        // Each service serves its OpenAPI description: the committed file, valid by a validator.
        for (serviceName, port, _) in services {
            let file = Self.root.appendingPathComponent("proto/openapi/\(serviceName).json")
            let (status, served) = try await httpGet(port: port, path: "/openapi.json")
            #expect(status == 200)
            #expect(served == (try String(contentsOf: file, encoding: .utf8)), "\(serviceName)")
            let validator = Self.root.appendingPathComponent(".build/python/bin/openapi-spec-validator")
            try #require(FileManager.default.isExecutableFile(atPath: validator.path), "run scripts/python-env")
            let checked = try await runCommand(validator, [file.path])
            #expect(checked.status == 0 && checked.output.contains(": OK"), "\(checked.output)\(checked.errors)")
        }
        // Every unary method of the three services was called.
        #expect(compared == ProtoSchema.services.flatMap(\.methods).filter { !$0.isServerStreaming }.count)
        await stack.stop()
    }

    @Test("API keys on a real service: missing and wrong keys are 401, SIGHUP revokes a key and reloads the policy too")
    func apiKeysAndReload() async throws {
        let stack = try await EntitlementStack()
        let keys = stack.directory.appendingPathComponent("api-keys").path
        func write(_ pairs: [(String, String)]) throws {
            let text = pairs.map { "\($0.0) \(Digest.sha256Hex(Array($0.1.utf8)))" }.joined(separator: "\n")
            try text.write(toFile: keys, atomically: true, encoding: .utf8)
        }
        try write([("billing", "key-one"), ("crm", "key-two")])
        let (entitlement, _, http) = try await stack.startEntitlement(environment: ["API_KEYS_FILE": keys])
        let method = EntitlementRPC.checkAccess.name
        let body = Array(#"{"accountId": "alice", "capability": "pro"}"#.utf8)
        let missing = try await connectCall(port: http, method: method, body: body)
        #expect(missing.status == 401)
        #expect(
            missing.text == #"{"code":"unauthenticated","message":"an API key is required: Authorization: Bearer KEY"}"#
        )
        let wrong = try await connectCall(
            port: http, method: method, body: body, headers: ["Authorization": "Bearer nope"])
        #expect(wrong.status == 401)
        let allowed = try await connectCall(
            port: http, method: method, body: body, headers: ["Authorization": "Bearer key-two"])
        #expect(allowed.status == 200)
        #expect(
            allowed.text
                == #"{"allowed":false,"reason":"ACCESS_REASON_NO_GRANT","detail":"nothing the account has grants pro"}"#
        )
        // Revoke crm's key and change the policy; one SIGHUP reloads both.
        try write([("billing", "key-one")])
        try (EntitlementStack.policy + "\ncapability extra\n  apple com.example.extra\n").write(
            toFile: stack.policyPath, atomically: true, encoding: .utf8)
        kill(entitlement.pid, SIGHUP)
        let reloaded = try await entitlement.line(containing: "api keys reloaded", within: 10)
        #expect(ServiceProcess.field("keys", in: reloaded) == "1")
        _ = try await entitlement.line(containing: "policy reloaded", within: 10)
        let revoked = try await connectCall(
            port: http, method: method, body: body, headers: ["Authorization": "Bearer key-two"])
        #expect(revoked.status == 401)
        #expect(revoked.text == #"{"code":"unauthenticated","message":"the API key is not valid"}"#)
        let kept = try await connectCall(
            port: http, method: method, body: body, headers: ["Authorization": "Bearer key-one"])
        #expect(kept.status == 200)
        // No key reaches the log.
        #expect(!entitlement.log.joined().contains("key-one") && !entitlement.log.joined().contains("key-two"))
        entitlement.terminate()
        _ = await entitlement.waitForExit()
        await stack.stop()
    }

    @Test("the services the HTTP listener points a misplaced call to are the services, on their default ports")
    func systemServicesAreTheServices() {
        #expect(
            SystemServices.all.map { "\($0.protoService) \($0.name) 127.0.0.1:\($0.rpcPort) 127.0.0.1:\($0.httpPort)" }
                == [
                    "\(VerifierService.serviceName) verifier \(VerifierService.defaultRPCListen) "
                        + VerifierService.defaultHTTPListen,
                    "\(LedgerService.serviceName) ledger \(LedgerService.defaultRPCListen) "
                        + LedgerService.defaultHTTPListen,
                    "\(EntitlementService.serviceName) entitlement \(EntitlementService.defaultRPCListen) "
                        + EntitlementService.defaultHTTPListen,
                ])
        #expect(Set(SystemServices.all.map(\.protoService)) == Set(ProtoSchema.services.map(\.fullName)))
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `Tests/Python/connect_calls.py` with the environment `scripts/python-env` makes,
    /// against `port`; returns one parsed answer per call.
    static func python(port: Int, calls: [[String: Any]]) async throws -> [[String: Any]] {
        let python = root.appendingPathComponent(".build/python/bin/python3")
        try #require(
            FileManager.default.isExecutableFile(atPath: python.path),
            "no \(python.path): run scripts/python-env (make test does)")
        let result = try await runCommand(
            python, [root.appendingPathComponent("Tests/Python/connect_calls.py").path, "http://127.0.0.1:\(port)"],
            input: try JSONSerialization.data(withJSONObject: calls))
        try #require(result.status == 0, "connect_calls.py failed: \(result.errors)")
        return try result.output.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test(
        "Python's connectrpc client (PyPI) calls the services in JSON and in protobuf, gzip-compressed, and reads their errors"
    )
    func pythonClient() async throws {
        let stack = try await EntitlementStack()
        let (entitlement, client, http) = try await stack.startEntitlement()
        let future: Int64 = 4_100_000_000_000
        let position = try await stack.purchase(
            "2000000077", account: "alice", expires: future, storeTime: 1_790_000_000_000)
        try await EntitlementStack.waitForPosition(position, http: http)
        let request = CheckAccessRequest(accountID: "alice", capability: "pro")
        let overRPC = try await client.unary(EntitlementRPC.checkAccess.name, request: request.serialized())
        let answers = try await Self.python(
            port: http,
            calls: [
                [
                    "method": EntitlementRPC.checkAccess.name, "codec": "json",
                    "request": ["accountId": "alice", "capability": "pro"],
                ],
                [
                    "method": EntitlementRPC.checkAccess.name, "codec": "proto",
                    "request": request.serialized().map { String(format: "%02x", $0) }.joined(),
                ],
                [
                    "method": EntitlementRPC.checkAccess.name, "codec": "json",
                    "request": ["accountId": "x", "capability": 5],
                ],
                // Denied: `allowed` is there, false, as `hasActive` is.
                [
                    "method": EntitlementRPC.checkAccess.name, "codec": "json",
                    "request": ["accountId": "bob", "capability": "pro"],
                ],
                [
                    "method": EntitlementRPC.hasActiveSubscriptions.name, "codec": "json",
                    "request": ["accountId": "bob"],
                ],
            ])
        #expect(answers.count == 5)
        let expectedJSON = try JSONSerialization.jsonObject(
            with: Data(
                try ProtoJSON.decodeToJSON(
                    overRPC, as: CheckAccessResponse.protoName, pretty: false, defaults: .boolsAndLists
                ).utf8))
        #expect((answers[0]["ok"] as? NSDictionary) == (expectedJSON as? NSDictionary))
        #expect((answers[0]["ok"] as? [String: Any])?["allowed"] as? Bool == true)
        #expect(answers[1]["ok"] as? String == overRPC.map { String(format: "%02x", $0) }.joined())
        let refusal = answers[2]["error"] as? [String: String]
        #expect(refusal?["code"] == "invalid_argument")
        #expect(
            refusal?["message"]
                == "subscriptions.entitlement.v1.CheckAccessRequest.capability: expected a string, got 5")
        let denied = try #require(answers[3]["ok"] as? [String: Any])
        #expect(denied["allowed"] as? Bool == false)
        #expect(denied["reason"] as? String == "ACCESS_REASON_NO_GRANT")
        #expect((answers[4]["ok"] as? [String: Any])?["hasActive"] as? Bool == false)
        entitlement.terminate()
        _ = await entitlement.waitForExit()
        await stack.stop()
    }

    @Test(
        "with TLS the HTTP listener is HTTPS (TLS 1.3): a client certificate's names go through RPC_ALLOW, a missing, expired or foreign one is 401"
    )
    func httpsWithClientCertificates() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("https-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let now = Date()
        let year = now.addingTimeInterval(365 * 86400)
        let pki = try TestPKI.write(
            to: folder + "/trusted", caName: "Test CA",
            identities: [
                ("ledger", now.addingTimeInterval(-60), year), ("billing", now.addingTimeInterval(-60), year),
                ("expired", now.addingTimeInterval(-30 * 86400), now.addingTimeInterval(-86400)),
            ])
        let stranger = try TestPKI.write(
            to: folder + "/stranger", caName: "Stranger CA",
            identities: [("billing", now.addingTimeInterval(-60), year)])
        let server = try #require(pki["ledger"])
        let ledger = try ServiceProcess(
            "ledger",
            environment: [
                "TLS_CERT": server.certificatePath, "TLS_KEY": server.keyPath, "TLS_CA": pki.caCertificatePath,
                "RPC_ALLOW": "Ledger/GetFeedPosition=billing; */Health=*",
            ], directory: URL(fileURLWithPath: folder))
        let port = try await ledger.httpPort()
        let listening = try await ledger.line(containing: "\"http server listening\"", within: 10)
        #expect(ServiceProcess.field("tls", in: listening) == "on")
        /// curl's status code and body for `method`, with `client`'s certificate when given.
        func call(_ method: String, as client: TestPKIFiles.Identity?, extra: [String] = []) async throws -> (
            Int, String
        ) {
            var arguments = [
                "-s", "-o", "-", "-w", "\\n%{http_code}", "--cacert", pki.caCertificatePath,
                "-H", "Content-Type: application/json", "-d", "{}",
                "https://127.0.0.1:\(port)/subscriptions.ledger.v1.Ledger/\(method)",
            ]
            if let client { arguments += ["--cert", client.certificatePath, "--key", client.keyPath] }
            let result = try await runCommand(URL(fileURLWithPath: "/usr/bin/curl"), arguments + extra)
            let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
            // No HTTP answer (a failed handshake) is status 0 and curl's exit status, negated.
            let status = Int(lines.last ?? "") ?? 0
            return (status == 0 ? -Int(result.status) : status, lines.dropLast().joined(separator: "\n"))
        }
        let billing = try #require(pki["billing"])
        let allowed = try await call("GetFeedPosition", as: billing)
        #expect(allowed.0 == 200, "\(allowed)")
        let denied = try await call("ListInbox", as: billing)
        #expect(denied.0 == 403)
        #expect(
            denied.1
                == #"{"code":"permission_denied","message":"billing may not call subscriptions.ledger.v1.Ledger/ListInbox"}"#
        )
        let anonymous = try await call("GetFeedPosition", as: nil)
        #expect(anonymous.0 == 401)
        #expect(
            anonymous.1
                == #"{"code":"unauthenticated","message":"this server requires a client certificate or an API key"}"#)
        for refused in [try #require(pki["expired"]), try #require(stranger["billing"])] {
            let answer = try await call("GetFeedPosition", as: refused)
            #expect(answer.0 == 401, "\(refused.certificatePath)")
            #expect(
                answer.1
                    == #"{"code":"unauthenticated","message":"the client certificate does not chain to TLS_CA or is not valid now"}"#
            )
        }
        // TLS 1.2 is not offered: the handshake fails (curl's exit status 35).
        let old = try await call("GetFeedPosition", as: billing, extra: ["--tls-max", "1.2"])
        #expect(old.0 == -35)
        ledger.terminate()
        _ = await ledger.waitForExit()
    }
}
