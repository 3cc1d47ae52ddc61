import AppStore
import SubctlKit
import Testing

@Suite("SubctlCommand: parsing apple verify")
struct AppleCommandParsingTests {
    static let jws = "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"

    @Test func jwsFromAnArgumentStandardInputOrAFile() throws {
        #expect(
            try SubctlCommand.parse([
                "apple", "verify", Self.jws, "--root", "r.cer", "--bundle", "b", "--env", "Sandbox",
            ])
                == .apple(
                    .verify(
                        AppleVerifyOptions(
                            source: .argument(Self.jws), rootPaths: ["r.cer"], bundleID: "b", environment: .sandbox))))
        #expect(
            try SubctlCommand.parse(["apple", "verify", "-", "--root=r.pem", "--bundle=b", "--env=xcode"])
                == .apple(
                    .verify(
                        AppleVerifyOptions(
                            source: .standardInput, rootPaths: ["r.pem"], bundleID: "b", environment: .xcode))))
        #expect(
            try SubctlCommand.parse([
                "apple", "verify", "--file", "n.jws", "--root", "a.cer", "--root", "b.pem", "--bundle", "com.x",
                "--env", "PRODUCTION", "--app-id", "1470168868", "--kind", "Notification",
            ])
                == .apple(
                    .verify(
                        AppleVerifyOptions(
                            source: .file("n.jws"), rootPaths: ["a.cer", "b.pem"], bundleID: "com.x",
                            environment: .production, appAppleID: 1_470_168_868, kind: .notification))))
        #expect(
            try SubctlCommand.parse([
                "apple", "verify", "--env", "localtesting", "--kind", "renewal", "--bundle", "b", "--root", "r", "--",
                "-odd",
            ])
                == .apple(
                    .verify(
                        AppleVerifyOptions(
                            source: .argument("-odd"), rootPaths: ["r"], bundleID: "b", environment: .localTesting,
                            kind: .renewal))))
        #expect(
            try SubctlCommand.parse(["apple", "verify", "x", "--root", "r", "--bundle", "b", "--env", "sandbox"])
                .callOptions == nil)
    }

    @Test(arguments: [
        (
            ["apple"],
            "USAGE: apple needs a subcommand (verify, extend, extend-status, set-token, refunds or consumption)"
        ),
        (
            ["apple", "check"],
            #"USAGE: unknown apple command "check" (verify, extend, extend-status, set-token, refunds or consumption)"#
        ),
        (
            ["apple", "verify", "--root", "r", "--bundle", "b", "--env", "Sandbox"],
            "USAGE: apple verify needs the JWS: as an argument, - for standard input, or --file PATH"
        ),
        (
            ["apple", "verify", "x", "--file", "f", "--root", "r", "--bundle", "b", "--env", "Sandbox"],
            "USAGE: apple verify takes the JWS as an argument, - or --file, not two"
        ),
        (
            ["apple", "verify", "x", "y", "--root", "r", "--bundle", "b", "--env", "Sandbox"],
            #"USAGE: unexpected argument "y" for apple verify"#
        ),
        (
            ["apple", "verify", "x", "--bundle", "b", "--env", "Sandbox"],
            "USAGE: apple verify needs --root PATH (Apple Root CA - G3, .cer or .pem)"
        ),
        (["apple", "verify", "x", "--root", "r", "--env", "Sandbox"], "USAGE: apple verify needs --bundle BUNDLE_ID"),
        (
            ["apple", "verify", "x", "--root", "r", "--bundle", "b"],
            "USAGE: apple verify needs --env Sandbox|Production|Xcode|LocalTesting"
        ),
        (
            ["apple", "verify", "x", "--root", "r", "--bundle", "b", "--env", "prod"],
            #"USAGE: --env expects Sandbox, Production, Xcode or LocalTesting, got "prod""#
        ),
        (
            ["apple", "verify", "x", "--root", "r", "--bundle", "b", "--env", "Production"],
            "USAGE: --env Production needs --app-id (the app's Apple id, appAppleId)"
        ),
        (
            ["apple", "verify", "x", "--root", "r", "--bundle", "b", "--env", "Sandbox", "--app-id", "0"],
            #"USAGE: --app-id expects the app's Apple id, a positive number, got "0""#
        ),
        (
            ["apple", "verify", "x", "--root", "r", "--bundle", "b", "--env", "Sandbox", "--kind", "receipt"],
            #"USAGE: --kind expects notification, transaction or renewal, got "receipt""#
        ),
        (
            ["apple", "verify", "x", "--root", "r", "--bundle", "b", "--env", "Sandbox", "--bundle", "c"],
            "USAGE: --bundle is given twice"
        ),
        (["apple", "verify", "x", "--root"], "USAGE: --root needs a value"),
        (
            ["apple", "verify", "x", "--root", "r", "--bundle", "b", "--env", "Sandbox", "--addr", "h:1"],
            "USAGE: unknown option --addr for apple verify"
        ),
    ])
    func badCommandLines(arguments: [String], expected: String) {
        let error = #expect(throws: SubctlError.self) { try SubctlCommand.parse(arguments) }
        #expect(error?.description == expected)
    }

    @Test(arguments: [
        (#"{"notificationType":"TEST","transactionId":"1"}"#, AppleVerifyOptions.Kind.notification),
        (#"{"transactionId":"1","originalTransactionId":"1"}"#, .transaction),
        (#"{"autoRenewStatus":0}"#, .renewal),
        (#"{"renewalDate":1}"#, .renewal),
        (#"{"originalTransactionId":"1","productId":"p"}"#, .renewal),
    ])
    func kindFromThePayload(payload: String, kind: AppleVerifyOptions.Kind) {
        #expect(AppleVerifyOptions.Kind.detect(payload: Array(payload.utf8)) == kind)
    }

    @Test(arguments: [#"{"bundleId":"b"}"#, "[]", "not json", ""])
    func noKindFromOtherPayloads(payload: String) {
        #expect(AppleVerifyOptions.Kind.detect(payload: Array(payload.utf8)) == nil)
    }

    @Test func eachRefusalHasItsOwnExitStatusListedInTheUsage() {
        let codes: [AppleVerificationError.Code] = [
            .malformed, .unsupportedAlgorithm, .badChain, .badCertificate, .badSignature, .wrongApp,
            .wrongEnvironment, .retryable,
        ]
        let statuses = codes.map { SubctlError(.refused($0), "x").code.exitCode }
        #expect(statuses == [10, 11, 12, 13, 14, 15, 16, 17])
        let usage = SubctlCommand.usage.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for (code, status) in zip(codes, statuses) {
            #expect(usage.contains("\(status) \(code)"), "\(status) \(code)")
        }
        #expect(SubctlError(.refused(.badSignature), "x").description == "BAD_SIGNATURE: x")
    }
}
