import Model
import Testing
import Wire

/// Encodings checked byte by byte against hand-computed protobuf, and decoded back.
@Suite("Ledger wire bytes")
struct LedgerWireBytesTests {
    @Test("GetSubscriptionRequest: a key sub-message")
    func getSubscriptionRequest() throws {
        let request = GetSubscriptionRequest(key: SubscriptionKey(store: .apple, environment: .sandbox, storeID: "abc"))
        // field 1 LEN 9 { field 1 varint 1, field 2 varint 2, field 3 LEN 3 "abc" }
        let expected: [UInt8] = [0x0a, 0x09, 0x08, 0x01, 0x10, 0x02, 0x1a, 0x03, 0x61, 0x62, 0x63]
        #expect(request.serialized() == expected)
        #expect(try GetSubscriptionRequest(serialized: expected) == request)
    }

    @Test("WatchChangesRequest: a multi-byte varint")
    func watchChangesRequest() throws {
        // 300 = 0b10_0101100 → 0xac 0x02
        #expect(WatchChangesRequest(after: 300).serialized() == [0x08, 0xac, 0x02])
        #expect(try WatchChangesRequest(serialized: [0x08, 0xac, 0x02]) == WatchChangesRequest(after: 300))
    }

    @Test("MarkInboxRequest: enums and a two-byte UTF-8 character, in field order")
    func markInboxRequest() throws {
        let request = MarkInboxRequest(store: .google, notificationID: "n1", status: .failed, error: "é")
        let expected: [UInt8] = [
            0x08, 0x02,  // store GOOGLE
            0x12, 0x02, 0x6e, 0x31,  // notification_id "n1"
            0x18, 0x03,  // status FAILED
            0x22, 0x02, 0xc3, 0xa9,  // error "é"
        ]
        #expect(request.serialized() == expected)
        #expect(try MarkInboxRequest(serialized: expected) == request)
    }

    @Test("ListInboxResponse: repeated sub-messages keep their order")
    func listInboxResponse() throws {
        let response = ListInboxResponse(
            entries: [InboxEntry(notificationID: "a"), InboxEntry(notificationID: "b")], nextPageToken: "t")
        let expected: [UInt8] = [
            0x0a, 0x03, 0x1a, 0x01, 0x61,  // entries[0] { notification_id "a" }
            0x0a, 0x03, 0x1a, 0x01, 0x62,  // entries[1] { notification_id "b" }
            0x12, 0x01, 0x74,  // next_page_token "t"
        ]
        #expect(response.serialized() == expected)
        #expect(try ListInboxResponse(serialized: expected) == response)
    }

    @Test("Change: UInt64.max and a negative time are ten-byte varints")
    func change() throws {
        let change = Change(position: .max, committedTimeMilliseconds: -1, kind: .link)
        let tenByteAllOnes: [UInt8] = Array(repeating: 0xff, count: 9) + [0x01]
        let expected: [UInt8] = [0x08] + tenByteAllOnes + [0x10] + tenByteAllOnes + [0x18, 0x02]
        #expect(change.serialized() == expected)
        #expect(try Change(serialized: expected) == change)
    }

    @Test("LinkAccountRequest: a negative unknown enum number is a sign-extended varint")
    func negativeEnum() throws {
        let request = LinkAccountRequest(policy: .unknown(-1))
        let expected: [UInt8] = [0x28] + Array(repeating: 0xff, count: 9) + [0x01]
        #expect(request.serialized() == expected)
        #expect(try LinkAccountRequest(serialized: expected).policy == .unknown(-1))
        #expect(LinkAccountRequest(policy: .keep).serialized() == [0x28, 0x02])
    }
}
