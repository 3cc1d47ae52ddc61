import AppStore
import Crypto
import EntitlementService
import Foundation
import GooglePlay
import HTTP
import Observability
import Wire

/// The fuzz targets: each takes one input from libFuzzer and runs the project's own parser of
/// hostile input on it. A crash, a leak or a trap is a finding; a refusal is the expected answer.
enum FuzzTargets {
    static let all: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "frame": frame, "messages": messages, "apple": apple, "google": google, "policy": policy, "http": http,
        "snapshot": snapshot,
    ]

    /// The target `FUZZ_TARGET` names; stops the run with the list when it names none.
    static let target: @Sendable (UnsafeRawBufferPointer) -> Void = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = all[name] else {
            fatalError("FUZZ_TARGET must be one of \(all.keys.sorted().joined(separator: ", ")), not \"\(name)\"")
        }
        return target
    }()

    // MARK: Frames and envelopes

    /// The frame decoder fed the input in three splits (with an admission for long frames that
    /// reads the leading method), each frame scanned in place and, when that succeeds, unpacked
    /// by protobuf-c too: the two must agree.
    static func frame(_ input: UnsafeRawBufferPointer) {
        var decoder = FrameDecoder(maxFrameLength: 1 << 16)
        decoder.admitAbove = 512
        let cut1 = input.count / 3
        let cut2 = 2 * input.count / 3
        for range in [0..<cut1, cut1..<cut2, cut2..<input.count] {
            do {
                try decoder.decode(
                    UnsafeRawBufferPointer(rebasing: input[range]),
                    admit: { length, prefix in
                        Envelope.leadingMethod(in: prefix) == nil ? "no method in the first bytes" : nil
                    },
                    onFrame: compare)
            } catch {
                return
            }
        }
    }

    private static func compare(_ frame: UnsafeRawBufferPointer) {
        guard let scanned = try? Envelope.scanned(frame) else { return }
        _ = try? Envelope.withDecoded(frame) { decoded in
            // protobuf-c keeps a method only up to a NUL and a kind only when the enum knows it.
            precondition(scanned.callID == decoded.callID, "call id differs")
            precondition(scanned.timeoutMilliseconds == decoded.timeoutMilliseconds, "timeout differs")
            precondition(scanned.window == decoded.window, "window differs")
            precondition(Array(scanned.payload) == Array(decoded.payload), "payload differs")
            precondition(Array(scanned.method.prefix(decoded.method.count)) == Array(decoded.method), "method differs")
        }
    }

    // MARK: Request messages

    /// Every request message's decode (the first byte picks the type), within the standard
    /// budget and a tight one.
    static func messages(_ input: UnsafeRawBufferPointer) {
        guard let first = input.first else { return }
        let payload = UnsafeRawBufferPointer(rebasing: input.dropFirst())
        let decoders: [(UnsafeRawBufferPointer) throws -> Void] = [
            { _ = try CheckAccessRequest(serialized: $0) }, { _ = try CheckAccessBatchRequest(serialized: $0) },
            { _ = try ListEntitlementsRequest(serialized: $0) }, { _ = try ReloadPolicyRequest(serialized: $0) },
            { _ = try AdvanceCursorRequest(serialized: $0) }, { _ = try GetAccountRequest(serialized: $0) },
            { _ = try GetCursorRequest(serialized: $0) }, { _ = try GetFeedPositionRequest(serialized: $0) },
            { _ = try GetHistoryRequest(serialized: $0) }, { _ = try GetSubscriptionRequest(serialized: $0) },
            { _ = try LinkAccountRequest(serialized: $0) }, { _ = try ListInboxRequest(serialized: $0) },
            { _ = try ListSubscriptionsRequest(serialized: $0) }, { _ = try MarkInboxRequest(serialized: $0) },
            { _ = try RecordNotificationRequest(serialized: $0) },
            { _ = try RecordVerifiedStateRequest(serialized: $0) },
            { _ = try ReplayInboxRequest(serialized: $0) }, { _ = try SnapshotRequest(serialized: $0) },
            { _ = try WatchChangesRequest(serialized: $0) }, { _ = try RefreshSubscriptionRequest(serialized: $0) },
            { _ = try RestorePurchasesRequest(serialized: $0) }, { _ = try VerifyApplePurchaseRequest(serialized: $0) },
            { _ = try VerifyGooglePurchaseRequest(serialized: $0) }, { _ = try HealthRequest(serialized: $0) },
        ]
        let decode = decoders[Int(first) % decoders.count]
        _ = try? decode(payload)
        _ = try? DecodeBudget.$current.withValue(
            DecodeBudget(maxFields: 50, maxRepeated: 5, maxUnknownFields: 2, maxDepth: 2)
        ) {
            try decode(payload)
        }
    }

    // MARK: Snapshot chunks

    /// The entitlement view's in-place reading of a snapshot chunk (`WireSubscription`); when
    /// protobuf-c's decode accepts the same bytes, the view loaded from its subscriptions must
    /// hold the same accounts and subscriptions.
    static func snapshot(_ input: UnsafeRawBufferPointer) {
        var builder = EntitlementView.Builder()
        guard let summary = try? builder.add(serializedChunk: input) else { return }
        guard let chunk = try? SnapshotChunk(serialized: input) else { return }
        precondition(summary.subscriptions == chunk.subscriptions.count, "the two reads count different subscriptions")
        precondition(summary.complete == chunk.complete && summary.position == chunk.position)
        let inPlace = EntitlementView()
        inPlace.install(builder, position: 1)
        let decoded = EntitlementView()
        decoded.load(chunk.subscriptions, position: 1)
        precondition(inPlace.counts == decoded.counts, "the two reads load different views")
    }

    // MARK: Store payloads

    /// Apple Root CA - G3, beside this file (scripts/fuzz runs from the repository root).
    static let appleRoot = "Tests/Fuzz/AppleRootCA-G3.pem"

    /// A Sandbox verifier trusting the real Apple root, for the seeds' bundle.
    static let appleVerifier: AppleSignedDataVerifier? = {
        guard let anchors = try? X509Certificate.loadPEMChain(path: appleRoot) else { return nil }
        return try? AppleSignedDataVerifier(
            anchors: anchors,
            configuration: .init(bundleID: "com.loki-project.loki-messenger", environment: .sandbox))
    }()

    /// The App Store's signed data: a notification, a transaction and renewal info, verified
    /// against the real root at a fixed time (the fixtures' September-October 2025).
    static func apple(_ input: UnsafeRawBufferPointer) {
        guard let verifier = appleVerifier else { fatalError("no Apple root at \(appleRoot)") }
        let text = String(decoding: input, as: UTF8.self)
        let now = Date(timeIntervalSince1970: 1_760_000_000)
        if let notification = try? verifier.verifyNotification(text, now: now) {
            if let transaction = notification.data?.signedTransactionInfo {
                _ = try? verifier.verifyTransaction(transaction, now: now)
            }
            if let renewal = notification.data?.signedRenewalInfo {
                _ = try? verifier.verifyRenewalInfo(renewal, now: now)
            }
        }
        _ = try? verifier.verifyTransaction(text, now: now)
        _ = try? verifier.verifyRenewalInfo(text, now: now)
    }

    /// Google's payloads: a Pub/Sub push body and its developer notification, and a
    /// subscriptionsv2 answer normalized as the adapter does.
    static func google(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        if let envelope = try? PubSubPushEnvelope(json: bytes) { _ = try? envelope.developerNotification() }
        _ = try? DeveloperNotification(json: bytes)
        if let purchase = try? JSONDecoder().decode(SubscriptionPurchaseV2.self, from: Data(bytes)) {
            _ = try? GooglePlayLifecycle.subscription(
                purchase, token: "t", packageName: "com.example", storeTime: 1, now: Date(timeIntervalSince1970: 1e9))
        }
    }

    // MARK: Policy and HTTP

    static func policy(_ input: UnsafeRawBufferPointer) {
        _ = try? ProductPolicy(parsing: Array(input))
    }

    /// A server on loopback, in this process, with the Pub/Sub push body check on a route: the
    /// input is written as raw bytes of one or more requests and the answers read.
    static let server: HTTPServer = {
        var limits = HTTPLimits(
            maxBodyBytes: 4096, headerTimeout: .milliseconds(500), requestTimeout: .seconds(1), idleTimeoutSeconds: 1)
        limits.maxConnectionsPerAddress = 0
        let server = HTTPServer(
            host: "127.0.0.1", port: 0, limits: limits, logger: .init(service: "fuzz", sink: .capturing()))
        server.route("POST", "/google/rtdn") { request in
            (try? PubSubPushEnvelope(json: request.body)) == nil ? .text("bad", status: 400) : .text("ok")
        }
        server.route("GET", "/healthz") { _ in .text("ok") }
        try! server.start()
        return server
    }()

    static func http(_ input: UnsafeRawBufferPointer) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(server.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        // The answer is read until the server closes or is silent for 20 ms.
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return }
        _ = send(fd, input.baseAddress, input.count, Int32(MSG_NOSIGNAL))
        shutdown(fd, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while recv(fd, &buffer, buffer.count, 0) > 0 {}
    }
}
