import Foundation
import Model
import ProtoJSON
import Testing
import Wire

@Suite("ProtoJSON: proto3 JSON ⇄ protobuf bytes by the generated schema table")
struct ProtoJSONTests {
    /// Encodes `json` and decodes the bytes again, compactly.
    private func roundTrip(_ json: String, as name: String) throws -> String {
        try ProtoJSON.decodeToJSON(try ProtoJSON.encode(json: json, as: name), as: name, pretty: false)
    }

    @Test func nestedMessageWithRepeatedEventsRoundTrips() throws {
        let json = """
            {"idempotency_key": "k-1",
             "subscription": {"key": {"store": "STORE_APPLE", "environment": "ENVIRONMENT_SANDBOX", "storeId": "1000"},
                              "accountId": "acct", "state": "SUBSCRIPTION_STATE_ACTIVE",
                              "expires_time_ms": "1700000000000", "autoRenew": true},
             "events": [{"position": "7", "kind": "EVENT_KIND_PURCHASED", "storeTimeMs": 1699999999000},
                        {"kind": 2, "key": {"storeId": "1000"}, "detail": "renewed"}]}
            """
        #expect(
            try roundTrip(json, as: "subscriptions.ledger.v1.RecordVerifiedStateRequest")
                == #"{"idempotencyKey":"k-1","subscription":{"key":{"store":"STORE_APPLE","environment":"#
                + #""ENVIRONMENT_SANDBOX","storeId":"1000"},"accountId":"acct","state":"SUBSCRIPTION_STATE_ACTIVE","#
                + #""expiresTimeMs":"1700000000000","autoRenew":true},"events":[{"position":"7","kind":"#
                + #""EVENT_KIND_PURCHASED","storeTimeMs":"1699999999000"},{"key":{"storeId":"1000"},"kind":"#
                + #""EVENT_KIND_RENEWED","detail":"renewed"}]}"#)
    }

    @Test("history as JSON carries each event's raw signed data, for subctl apple verify to check again")
    func historyCarriesRawSignedData() throws {
        let key = SubscriptionKey(store: .apple, environment: .sandbox, storeID: "1000")
        let response = GetHistoryResponse(events: [
            LifecycleEvent(
                key: key, kind: .renewed, rawPayload: "n.n.n", rawTransaction: "t.t.t", rawRenewalInfo: "r.r.r")
        ])
        let json = try ProtoJSON.decodeToJSON(
            response.serialized(), as: "subscriptions.ledger.v1.GetHistoryResponse", pretty: false)
        #expect(
            json
                == #"{"events":[{"key":{"store":"STORE_APPLE","environment":"ENVIRONMENT_SANDBOX","storeId":"1000"},"#
                + #""kind":"EVENT_KIND_RENEWED","rawPayload":"n.n.n","rawTransaction":"t.t.t","rawRenewalInfo":"r.r.r"}]}"#
        )
    }

    @Test("asked to, an answer writes unset bools as false and unset lists as [], in every message it holds")
    func boolsAndListsWrittenWhenAsked() throws {
        func both(_ json: String, _ name: String) throws -> (omitted: String, written: String) {
            let bytes = try ProtoJSON.encode(json: json, as: name)
            return (
                try ProtoJSON.decodeToJSON(bytes, as: name, pretty: false),
                try ProtoJSON.decodeToJSON(bytes, as: name, pretty: false, defaults: .boolsAndLists)
            )
        }
        let denied = try both(#"{"reason": "ACCESS_REASON_NO_GRANT"}"#, CheckAccessResponse.protoName)
        #expect(denied.omitted == #"{"reason":"ACCESS_REASON_NO_GRANT"}"#)
        #expect(denied.written == #"{"allowed":false,"reason":"ACCESS_REASON_NO_GRANT"}"#)
        // false given is false written; the enum at 0, the optional int64 and the absent grant stay out.
        #expect(try both(#"{"allowed": false}"#, CheckAccessResponse.protoName).written == #"{"allowed":false}"#)
        #expect(try both("{}", HasActiveSubscriptionsResponse.protoName).written == #"{"hasActive":false}"#)
        #expect(try both("{}", ListEntitlementsResponse.protoName).written == #"{"entitlements":[]}"#)
        let nested = try both(
            #"{"capabilities": [{"capability": "pro", "intervals": [{"kind": 0}]}]}"#,
            GetAccessTimelineResponse.protoName)
        #expect(nested.omitted == #"{"capabilities":[{"capability":"pro","intervals":[{}]}]}"#)
        #expect(
            nested.written
                == #"{"capabilities":[{"capability":"pro","intervals":[{"allowed":false}],"truncated":false}]}"#)
        #expect(
            try ProtoJSON.decodeToJSON(
                [], as: HasActiveSubscriptionsResponse.protoName, pretty: true, defaults: .boolsAndLists)
                == "{\n  \"hasActive\": false\n}")
        // Parsing takes either form: the written JSON is the same message.
        let written = try both(#"{"entitlements": [{"capability": "x"}]}"#, ListEntitlementsResponse.protoName)
        #expect(written.written == #"{"entitlements":[{"capability":"x","grants":[]}]}"#)
        #expect(
            try ProtoJSON.encode(json: written.written, as: ListEntitlementsResponse.protoName)
                == ListEntitlementsResponse(entitlements: [EntitlementEntry(capability: "x", grants: [])]).serialized())
    }

    @Test func prettyOutputIndentsByTwoSpaces() throws {
        let bytes = try ProtoJSON.encode(
            json: #"{"subscriptions": [{"key": {"storeId": "a"}}, {"productId": "p"}], "accountId": "x"}"#,
            as: "subscriptions.ledger.v1.GetAccountResponse")
        #expect(
            try ProtoJSON.decodeToJSON(bytes, as: "subscriptions.ledger.v1.GetAccountResponse", pretty: true)
                == """
                {
                  "accountId": "x",
                  "subscriptions": [
                    {
                      "key": {
                        "storeId": "a"
                      }
                    },
                    {
                      "productId": "p"
                    }
                  ]
                }
                """)
    }

    @Test func int64AcceptsNumbersAndStringsAndIsWrittenAsString() throws {
        let name = "subscriptions.entitlement.v1.CheckAccessRequest"
        #expect(try roundTrip(#"{"atMs": 9223372036854775807}"#, as: name) == #"{"atMs":"9223372036854775807"}"#)
        #expect(try roundTrip(#"{"at_ms": "-9223372036854775808"}"#, as: name) == #"{"atMs":"-9223372036854775808"}"#)
        #expect(
            try roundTrip(#"{"after": "18446744073709551615"}"#, as: "subscriptions.ledger.v1.WatchChangesRequest")
                == #"{"after":"18446744073709551615"}"#)
    }

    @Test func enumsAcceptNamesAndNumbersAndUnknownNumbersStayNumbers() throws {
        let name = "subscriptions.common.v1.SubscriptionKey"
        #expect(try roundTrip(#"{"store": "STORE_GOOGLE"}"#, as: name) == #"{"store":"STORE_GOOGLE"}"#)
        #expect(try roundTrip(#"{"store": 1}"#, as: name) == #"{"store":"STORE_APPLE"}"#)
        #expect(try roundTrip(#"{"store": 42}"#, as: name) == #"{"store":42}"#)
        #expect(try roundTrip(#"{"store": "STORE_UNSPECIFIED"}"#, as: name) == "{}")
    }

    @Test func repeatedStringsAndMessagesKeepOrderAndEmptyElements() throws {
        let json = """
            {"apple_signed_transactions": ["a", "", "c"], "appleTransactionIds": [],
             "googlePurchases": [{"packageName": "p1"}, {}]}
            """
        #expect(
            try roundTrip(json, as: "subscriptions.verifier.v1.RestorePurchasesRequest")
                == #"{"appleSignedTransactions":["a","","c"],"googlePurchases":[{"packageName":"p1"},{}]}"#)
    }

    @Test func bytesAreBase64BothWaysAndMatchTheGeneratedEnvelopeCode() throws {
        let payload: [UInt8] = [0, 1, 2, 250, 251, 255]
        let json = #"{"callId": "5", "kind": "FRAME_KIND_REQUEST", "method": "m", "payload": "AAEC+vv/", "window": 3}"#
        let bytes = try ProtoJSON.encode(json: json, as: "subscriptions.rpc.v1.Envelope")
        var frame: [UInt8] = []
        payload.withUnsafeBytes { raw in
            Envelope.appendFrame(to: &frame, callID: 5, kind: .request, method: "m", payload: raw, window: 3)
        }
        #expect(bytes == Array(frame[4...]))
        #expect(
            try ProtoJSON.decodeToJSON(bytes, as: "subscriptions.rpc.v1.Envelope", pretty: false)
                == #"{"callId":"5","kind":"FRAME_KIND_REQUEST","method":"m","payload":"AAEC+vv/","window":3}"#)
        // URL-safe and unpadded base64 are accepted too.
        #expect(
            try ProtoJSON.encode(json: #"{"payload": "AAEC-vv_"}"#, as: "subscriptions.rpc.v1.Envelope")
                == ProtoJSON.encode(json: #"{"payload": "AAEC+vv/"}"#, as: "subscriptions.rpc.v1.Envelope"))
    }

    @Test func healthResponseBytesEqualWireGeneratedCode() throws {
        let json = """
            {"status": "SERVING_STATUS_SERVING", "service": "ledger", "version": "0.1.0",
             "uptimeMs": "12345", "serverTimeMs": 1700000000000, "connections": 4}
            """
        let expected = HealthResponse(
            status: .serving, service: "ledger", version: "0.1.0", uptimeMilliseconds: 12345,
            serverTimeMilliseconds: 1_700_000_000_000, connections: 4
        ).serialized()
        #expect(try ProtoJSON.encode(json: json, as: "subscriptions.common.v1.HealthResponse") == expected)
        // Empty strings and zeros are left out exactly as the generated code leaves them out.
        let sparse = HealthResponse(
            status: .draining, service: "", version: "", uptimeMilliseconds: 0, serverTimeMilliseconds: 0,
            connections: 0)
        #expect(
            try ProtoJSON.encode(
                json: #"{"status": 3, "service": "", "version": "", "uptimeMs": 0}"#,
                as: "subscriptions.common.v1.HealthResponse") == sparse.serialized())
        #expect(
            try ProtoJSON.decodeToJSON(expected, as: "subscriptions.common.v1.HealthResponse", pretty: false)
                == #"{"status":"SERVING_STATUS_SERVING","service":"ledger","version":"0.1.0","uptimeMs":"12345","#
                + #""serverTimeMs":"1700000000000","connections":4}"#)
    }

    @Test func emptyObjectEncodesToNoBytesAndNullMeansDefault() throws {
        #expect(try ProtoJSON.encode(json: "{}", as: "subscriptions.ledger.v1.SnapshotRequest") == [])
        #expect(
            try ProtoJSON.encode(json: #"{"key": null}"#, as: "subscriptions.ledger.v1.GetSubscriptionRequest")
                == [])
        #expect(try ProtoJSON.decodeToJSON([], as: "subscriptions.ledger.v1.SnapshotChunk", pretty: true) == "{}")
    }

    /// Each body is read by the direct reader (strings, booleans, null, objects, arrays); the same
    /// body with its first key's first letter written as a `\u` escape goes to JSONSerialization.
    @Test(
        "a request of strings, booleans and objects gives the bytes JSONSerialization's reading gives",
        arguments: [
            (#"{"accountId":"acct-1","capability":"pro"}"#, "subscriptions.entitlement.v1.CheckAccessRequest"),
            (
                " \t\r\n{ \"accountId\" : \"a\\\"b\\\\c\\/d\\n\\t\" ,\n \"capability\":\"\"} \n",
                "subscriptions.entitlement.v1.CheckAccessRequest"
            ),
            (#"{"accountId":"é ü 😀","atMs":null}"#, "subscriptions.entitlement.v1.CheckAccessRequest"),
            (#"{"allowed":true,"detail":"x"}"#, "subscriptions.entitlement.v1.CheckAccessResponse"),
            (#"{"allowed":false}"#, "subscriptions.entitlement.v1.CheckAccessResponse"),
            (
                #"{"checks":[{"accountId":"a","capability":"pro"},{},{"accountId":"b"}]}"#,
                "subscriptions.entitlement.v1.CheckAccessBatchRequest"
            ),
            (#"{"key":{"store":"STORE_APPLE","storeId":"1000"}}"#, "subscriptions.ledger.v1.GetSubscriptionRequest"),
            (#"{"key":{}}"#, "subscriptions.ledger.v1.GetSubscriptionRequest"),
        ])
    func directReadingMatchesFoundation(json: String, message: String) throws {
        let quote = json.firstIndex(of: "\"")!
        let letter = json[json.index(after: quote)]
        let escaped =
            String(json[...quote]) + "\\u00" + String(letter.asciiValue!, radix: 16)
            + String(json[json.index(quote, offsetBy: 2)...])
        #expect(escaped != json)
        #expect(try ProtoJSON.encode(json: json, as: message) == ProtoJSON.encode(json: escaped, as: message))
    }

    @Test func stringsAreEscapedInOutput() throws {
        #expect(
            try roundTrip(#"{"detail": "a\"b\\c\nd\u0001é"}"#, as: "subscriptions.entitlement.v1.CheckAccessResponse")
                == #"{"detail":"a\"b\\c\nd\u0001é"}"#)
    }

    @Test(arguments: [
        (
            #"{"storeID": "x"}"#, "subscriptions.common.v1.SubscriptionKey",
            #"INVALID_ARGUMENT: subscriptions.common.v1.SubscriptionKey has no field "storeID""#
        ),
        (
            #"{"key": {"store_id": 5}}"#, "subscriptions.ledger.v1.GetSubscriptionRequest",
            "INVALID_ARGUMENT: subscriptions.common.v1.SubscriptionKey.store_id: expected a string, got 5"
        ),
        (
            #"{"pageSize": 4294967296}"#, "subscriptions.ledger.v1.GetHistoryRequest",
            "INVALID_ARGUMENT: subscriptions.ledger.v1.GetHistoryRequest.page_size: 4294967296 is out of range for uint32"
        ),
        (
            #"{"connections": -1}"#, "subscriptions.common.v1.HealthResponse",
            "INVALID_ARGUMENT: subscriptions.common.v1.HealthResponse.connections: -1 is out of range for uint32"
        ),
        (
            #"{"store": "STORE_AMAZON"}"#, "subscriptions.common.v1.SubscriptionKey",
            #"INVALID_ARGUMENT: subscriptions.common.v1.SubscriptionKey.store: "STORE_AMAZON" is not a value of subscriptions.common.v1.Store"#
        ),
        (
            #"{"store": 2147483648}"#, "subscriptions.common.v1.SubscriptionKey",
            "INVALID_ARGUMENT: subscriptions.common.v1.SubscriptionKey.store: 2147483648 is out of range for subscriptions.common.v1.Store"
        ),
        (
            #"{"atMs": "12x"}"#, "subscriptions.entitlement.v1.CheckAccessRequest",
            #"INVALID_ARGUMENT: subscriptions.entitlement.v1.CheckAccessRequest.at_ms: expected an integer (int64), got "12x""#
        ),
        (
            #"{"atMs": 1.5}"#, "subscriptions.entitlement.v1.CheckAccessRequest",
            "INVALID_ARGUMENT: subscriptions.entitlement.v1.CheckAccessRequest.at_ms: expected an integer (int64), got 1.5"
        ),
        (
            #"{"allowed": "yes"}"#, "subscriptions.entitlement.v1.CheckAccessResponse",
            #"INVALID_ARGUMENT: subscriptions.entitlement.v1.CheckAccessResponse.allowed: expected true or false, got "yes""#
        ),
        (
            #"{"checks": {"accountId": "a"}}"#, "subscriptions.entitlement.v1.CheckAccessBatchRequest",
            "INVALID_ARGUMENT: subscriptions.entitlement.v1.CheckAccessBatchRequest.checks: expected an array, got an object"
        ),
        (
            #"{"checks": [{"accountId": "a"}, {"atMs": true}]}"#,
            "subscriptions.entitlement.v1.CheckAccessBatchRequest",
            "INVALID_ARGUMENT: subscriptions.entitlement.v1.CheckAccessRequest.at_ms: expected an integer (int64), got true"
        ),
        (
            #"{"key": "k"}"#, "subscriptions.ledger.v1.GetSubscriptionRequest",
            #"INVALID_ARGUMENT: subscriptions.ledger.v1.GetSubscriptionRequest.key: expected an object (subscriptions.common.v1.SubscriptionKey), got "k""#
        ),
        (
            #"{"payload": "***"}"#, "subscriptions.rpc.v1.Envelope",
            #"INVALID_ARGUMENT: subscriptions.rpc.v1.Envelope.payload: expected base64 text, got "***""#
        ),
        (
            #"{"account_id": "a", "accountId": "b"}"#, "subscriptions.ledger.v1.GetAccountRequest",
            #"INVALID_ARGUMENT: subscriptions.ledger.v1.GetAccountRequest.account_id is given twice, as "accountId" and "account_id""#
        ),
        (
            #"[1]"#, "subscriptions.ledger.v1.GetAccountRequest",
            "INVALID_ARGUMENT: the request must be a JSON object (subscriptions.ledger.v1.GetAccountRequest)"
        ),
        (
            #"{"a": }"#, "subscriptions.ledger.v1.GetAccountRequest",
            "INVALID_ARGUMENT: the request is not valid JSON: Invalid value around character 6."
        ),
        ("{}", "subscriptions.ledger.v1.Nope", "NOT_FOUND: no message subscriptions.ledger.v1.Nope"),
    ])
    func encodingErrorsNameTheFieldAndTheProblem(json: String, message: String, expected: String) {
        let error = #expect(throws: RPCError.self) { try ProtoJSON.encode(json: json, as: message) }
        #expect(error?.description == expected)
    }

    @Test func undecodableBytesAreDataLoss() {
        let error = #expect(throws: RPCError.self) {
            try ProtoJSON.decodeToJSON(
                [0x0a, 0x05, 0x01], as: "subscriptions.ledger.v1.GetAccountRequest", pretty: false)
        }
        #expect(
            error?.description
                == "DATA_LOSS: the answer is not a valid subscriptions.ledger.v1.GetAccountRequest: "
                + "field 1 at byte 0 declares 5 bytes but 1 remain")
    }
}
