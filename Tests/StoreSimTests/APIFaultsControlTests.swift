import Foundation
import HTTP
import TestSupport
import Testing

@testable import StoreSimKit

/// `/control/{apple,google}/api-faults` as docs/simulator.md writes it: a count with a status or
/// a delay sets faults, a count of 0 clears them, and `{}` or a `GET` reports what is left.
@Suite("Store simulator: the API faults control")
struct APIFaultsControlTests {
    /// A simulator's control surface on port 0 and the faults of `store`'s API.
    final class Served: Sendable {
        let server: HTTPServer
        let faults: APIFaults
        let store: String

        init(_ store: String) throws {
            let (simulator, server) = try GooglePlayWire().controlServer()
            self.server = server
            faults = store == "apple" ? simulator.appleFaults : simulator.googleFaults
            self.store = store
        }

        deinit { server.stop() }

        func post(_ body: String) async throws -> (Int, String) {
            try await httpPost(port: server.port, path: "/control/\(store)/api-faults", body: body)
        }

        func get() async throws -> (Int, String) {
            try await httpGet(port: server.port, path: "/control/\(store)/api-faults")
        }

        /// The status one API call of `path` gets: the fault's, or 200 for the real answer.
        func call(_ path: String) -> Int {
            faults.answer(path: path, failure: { HTTPResponse(status: $0) }) { HTTPResponse(status: 200) }.status
        }
    }

    static let path = "/androidpublisher/v3/applications/com.example.app/purchases/subscriptionsv2/tokens/t1"

    @Test("a count with a status sets faults; {} and GET report what is left", arguments: ["apple", "google"])
    func setAndReport(store: String) async throws {
        let served = try Served(store)
        #expect(try await served.get() == (200, #"{"remaining":0}"#))
        #expect(
            try await served.post(#"{"count":2,"status":500,"path":"subscriptionsv2"}"#)
                == (200, #"{"notifications":[],"remaining":2}"#))
        #expect(try await served.get() == (200, #"{"remaining":2}"#))
        #expect(try await served.post("{}") == (200, #"{"notifications":[],"remaining":2}"#))
        #expect(served.call("/inApps/v1/history/1") == 200)
        #expect(served.call(Self.path) == 500)
        #expect(try await served.get() == (200, #"{"remaining":1}"#))
    }

    @Test("a count of 0 clears what is left, with or without a status", arguments: ["apple", "google"])
    func countZeroClears(store: String) async throws {
        let served = try Served(store)
        for clearing in [#"{"count":0}"#, #"{"count":0,"status":500,"path":"subscriptionsv2"}"#] {
            #expect(try await served.post(#"{"count":3,"status":503}"#).0 == 200)
            #expect(try await served.post(clearing) == (200, #"{"notifications":[],"remaining":0}"#))
            #expect(try await served.get() == (200, #"{"remaining":0}"#))
            #expect(served.call(Self.path) == 200)
        }
        #expect(try await served.post(#"{"count":1,"delayMs":5}"#) == (200, #"{"notifications":[],"remaining":1}"#))
        #expect(try await served.post(#"{"count":0}"#) == (200, #"{"notifications":[],"remaining":0}"#))
    }

    @Test(
        "faults asked for with neither a status nor a delay, or a negative count, are refused and change nothing",
        arguments: ["apple", "google"])
    func refusals(store: String) async throws {
        let served = try Served(store)
        #expect(try await served.post(#"{"count":2,"status":429}"#).0 == 200)
        let neither = #"{"error":"api-faults needs an HTTP error status or a delayMs of 1 to 60000"}"#
        for body in [#"{"count":1}"#, #"{"count":1,"status":200}"#, #"{"count":1,"delayMs":0}"#] {
            #expect(try await served.post(body) == (400, neither), "\(body)")
        }
        #expect(
            try await served.post(#"{"count":-1,"status":500}"#) == (400, #"{"error":"\"count\" must be 0 or more"}"#))
        #expect(try await served.get() == (200, #"{"remaining":2}"#))
    }
}
