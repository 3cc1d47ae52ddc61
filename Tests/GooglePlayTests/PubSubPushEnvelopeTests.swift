import Foundation
import GooglePlay
import Testing

@Suite("Pub/Sub push bodies")
struct PubSubPushEnvelopeTests {
    /// A push body with `message` members `message`, as JSON text.
    static func body(_ message: String, subscription: String? = #""projects/p/subscriptions/s""#) -> [UInt8] {
        Array((#"{"message":\#(message)"# + (subscription.map { #","subscription":\#($0)"# } ?? "") + "}").utf8)
    }

    static let testData = Data(
        #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1","testNotification":{"version":"1.0"}}"#
            .utf8
    ).base64EncodedString()

    @Test(
        "the real push body of a Play test notification decodes, with either spelling of the message id",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)),
        arguments: ["both", "messageId", "message_id"])
    func realTestNotification(spelling: String) throws {
        let original = try GoogleFixtures.data("pubsub/reef-technologies_2022-10-25_testNotification.json")
        var object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        var message = try #require(object["message"] as? [String: Any])
        switch spelling {
        case "messageId":
            message["message_id"] = nil
            message["publish_time"] = nil
        case "message_id":
            message["messageId"] = nil
            message["publishTime"] = nil
        default: break
        }
        object["message"] = message
        let body = spelling == "both" ? original : try JSONSerialization.data(withJSONObject: object)

        let envelope = try PubSubPushEnvelope(json: body)
        #expect(envelope.messageID == "6079043127548205")
        #expect(envelope.publishTime == "2022-10-25T13:15:00.858Z")
        #expect(GooglePlayLifecycle.millis(envelope.publishTime) == 1_666_703_700_858)
        #expect(
            envelope.subscription == "projects/pc-api-8164987956662966187-422/subscriptions/subscription-notifications")
        #expect(envelope.attributes == [:])
        #expect(
            String(decoding: envelope.data, as: UTF8.self)
                == #"{"version":"1.0","packageName":"com.prometheuspoker.battle","eventTimeMillis":"1666703700413","testNotification":{"version":"1.0"}}"#
        )
        let notification = try envelope.developerNotification()
        #expect(
            notification
                == DeveloperNotification(
                    version: "1.0", packageName: "com.prometheuspoker.battle", eventTimeMillis: 1_666_703_700_413,
                    kind: .test(TestNotification(version: "1.0"))))
        #expect(notification.eventTime == Date(timeIntervalSince1970: 1_666_703_700.413))
    }

    @Test(
        "the documented envelope shape decodes; its data is a placeholder, not a notification",
        .enabled(if: GoogleFixtures.available, Comment(rawValue: GoogleFixtures.skipMessage)))
    func documentedShape() throws {
        let envelope = try PubSubPushEnvelope(
            json: try GoogleFixtures.data("pubsub/docs_rtdn-reference_envelope_shape.json"))
        #expect(envelope.messageID == "136969346945")
        #expect(envelope.publishTime == nil)
        #expect(GooglePlayLifecycle.millis(envelope.publishTime) == nil)
        #expect(envelope.attributes == ["key": "value"])
        #expect(envelope.subscription == "projects/myproject/subscriptions/mysubscription")
        #expect(
            String(decoding: envelope.data, as: UTF8.self).hasPrefix(#"{ "version": string, "packageName": string"#))
        let error = #expect(throws: PubSubPushDecodingError.self) { try envelope.developerNotification() }
        #expect(error?.code == .notANotification)
        #expect(error?.message == "the notification is not JSON")
    }

    @Test("data decodes from standard base64 with or without padding")
    func base64Padding() throws {
        for text in ["eyJhIjoxfQ==", "eyJhIjoxfQ", "+/+/", "", "YQ", "YQ==", "YWI=", "YWI"] {
            let envelope = try PubSubPushEnvelope(json: Self.body(#"{"messageId":"1","data":"\#(text)"}"#))
            let unpadded = text.replacingOccurrences(of: "=", with: "")
            let padded = unpadded + String(repeating: "=", count: (4 - unpadded.count % 4) % 4)
            #expect(envelope.data == [UInt8](try #require(Data(base64Encoded: padded))))
        }
    }

    @Test(
        "malformed bodies are refused with a code and a message that names what is wrong",
        arguments: [
            ("not json", PubSubPushDecodingError.Code.notJSON, "the push body is not JSON"),
            ("[]", .notJSON, "the push body is not a JSON object"),
            ("{}", .missingField, "the push body has no message"),
            (#"{"message":null,"subscription":"s"}"#, .missingField, "the push body has no message"),
            (#"{"message":"x","subscription":"s"}"#, .invalidField, "the push body's message has the wrong type"),
            (#"{"message":{"data":""},"subscription":"s"}"#, .missingField, "the push message has no messageId"),
            (
                #"{"message":{"data":"","messageId":""},"subscription":"s"}"#, .missingField,
                "the push message has no messageId"
            ),
            (
                #"{"message":{"data":"","messageId":7},"subscription":"s"}"#, .invalidField,
                "the push body's message.messageId has the wrong type"
            ),
            (
                #"{"message":{"data":"","messageId":"1","message_id":"2"},"subscription":"s"}"#, .invalidField,
                "message.messageId and message.message_id differ"
            ),
            (
                #"{"message":{"data":"","messageId":"1","publishTime":"a","publish_time":"b"},"subscription":"s"}"#,
                .invalidField, "message.publishTime and message.publish_time differ"
            ),
            (#"{"message":{"messageId":"1"},"subscription":"s"}"#, .missingField, "the push message has no data"),
            (
                #"{"message":{"messageId":"1","data":"e30=","attributes":{"a":1}},"subscription":"s"}"#,
                .invalidField, "the push body's message.attributes.a has the wrong type"
            ),
            (#"{"message":{"messageId":"1","data":"e30="}}"#, .missingField, "the push body has no subscription"),
            (
                #"{"message":{"messageId":"1","data":"e30="},"subscription":""}"#, .missingField,
                "the push body has no subscription"
            ),
        ])
    func malformed(body: String, code: PubSubPushDecodingError.Code, message: String) throws {
        let error = #expect(throws: PubSubPushDecodingError.self) { try PubSubPushEnvelope(json: Array(body.utf8)) }
        #expect(error?.code == code)
        #expect(error?.message == message)
    }

    @Test(
        "data that is not standard base64 is refused",
        arguments: ["e3-_", "e30=\n", "e 30", "e30===", "=e30", "e", "YQ=", "e30////=="])
    func dataNotBase64(data: String) throws {
        let body = Self.body(#"{"messageId":"1","data":"\#(data.replacingOccurrences(of: "\n", with: "\\n"))"}"#)
        let error = #expect(throws: PubSubPushDecodingError.self) { try PubSubPushEnvelope(json: body) }
        #expect(error?.code == .dataNotBase64)
        #expect(error?.message == "message.data is not standard base64")
        #expect(error?.description == "data_not_base64: message.data is not standard base64")
    }

    @Test("bodies over the size limit are refused before parsing")
    func tooLarge() throws {
        let body = Self.body(#"{"messageId":"1","data":"\#(Self.testData)"}"#)
        #expect(try PubSubPushEnvelope(json: body, maxBytes: body.count).messageID == "1")
        let error = #expect(throws: PubSubPushDecodingError.self) {
            try PubSubPushEnvelope(json: body, maxBytes: body.count - 1)
        }
        #expect(error?.code == .tooLarge)
        #expect(error?.message == "the push body is \(body.count) bytes, more than the \(body.count - 1) accepted")
        #expect(PubSubPushEnvelope.defaultMaxBytes == 65536)
    }
}
