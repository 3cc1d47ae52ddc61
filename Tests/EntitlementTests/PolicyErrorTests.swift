import EntitlementService
import Model
import Testing

@Suite("Policy file errors")
struct PolicyErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let expected: PolicyError
        var testDescription: String { name }
    }

    static let states =
        "expected active, cancelled, grace_period, billing_retry, account_hold, paused, expired, revoked or pending"
    static let capabilityRule = "1 to 64 letters, digits, '_', '.' or '-', starting with a letter"
    static let productRule = "1 to 150 letters, digits, '_', '.' or '-', starting with a letter or digit"
    static let basePlanRule = "1 to 63 lowercase letters, digits or '-', starting with a letter or digit"
    static let outside = "product line outside a capability: products follow a \"capability NAME\" line"

    static let cases: [Case] = [
        Case(
            name: "unknown state name", text: "capability pro\n  apple com.example.pro\naccess grace yes\n",
            expected: PolicyError(.unknownState, line: 3, "unknown state \"grace\" (\(states))")),
        Case(
            name: "duplicate product",
            text: "capability pro\n  apple com.example.pro\n  google pro\n  apple com.example.pro\n",
            expected: PolicyError(
                .duplicateProduct, line: 4, "apple com.example.pro is already listed in capability pro on line 2")),
        Case(
            name: "duplicate Google product with base plan",
            text: "capability pro\n  google pro:annual\n  google pro\n  google pro:annual  # again\n",
            expected: PolicyError(
                .duplicateProduct, line: 4, "google pro:annual is already listed in capability pro on line 2")),
        Case(
            name: "capability without products, before another",
            text: "# header\ncapability pro\ncapability lite\n  apple com.example.lite\n",
            expected: PolicyError(.emptyCapability, line: 2, "capability pro lists no products")),
        Case(
            name: "capability without products, at the end",
            text: "capability pro\n  apple com.example.pro\ncapability lite\n\n# nothing more\n",
            expected: PolicyError(.emptyCapability, line: 3, "capability lite lists no products")),
        Case(
            name: "capability without products, before an access line",
            text: "capability pro\naccess paused no\n  apple com.example.pro\n",
            expected: PolicyError(.emptyCapability, line: 1, "capability pro lists no products")),
        Case(
            name: "malformed: capability without a name", text: "capability\n",
            expected: PolicyError(.malformed, line: 1, "malformed line: expected \"capability NAME\"")),
        Case(
            name: "malformed: capability with two names", text: "capability pro plus\n  apple a\n",
            expected: PolicyError(.malformed, line: 1, "malformed line: expected \"capability NAME\"")),
        Case(
            name: "malformed: access without a rule", text: "capability pro\n  apple a\naccess active\n",
            expected: PolicyError(.malformed, line: 3, "malformed line: expected \"access STATE yes|no\"")),
        Case(
            name: "malformed: two Apple products on a line", text: "capability pro\n  apple a b\n",
            expected: PolicyError(
                .malformed, line: 2, "malformed line: expected \"apple PRODUCT_ID [duration N(h|d|w)]\"")),
        Case(
            name: "malformed: Google line without a product", text: "capability pro\n  google\n",
            expected: PolicyError(
                .malformed, line: 2,
                "malformed line: expected \"google PRODUCT_ID[:BASE_PLAN_ID] [duration N(h|d|w)]\"")),
        Case(
            name: "malformed: unknown keyword", text: "\n\nhello world\n",
            expected: PolicyError(
                .malformed, line: 3, "malformed line: expected capability, access, apple or google, got \"hello\"")),
        Case(
            name: "malformed: three words in a capability", text: "capability pro\n  apple a\n  amazon b c\n",
            expected: PolicyError(
                .malformed, line: 3, "malformed line: expected capability, access, apple or google, got \"amazon\"")),
        Case(
            name: "unknown store", text: "capability pro\n  amazon com.example.pro\n",
            expected: PolicyError(.unknownStore, line: 2, "unknown store \"amazon\" (expected apple or google)")),
        Case(
            name: "product line before any capability", text: "# products\napple com.example.pro\n",
            expected: PolicyError(.productOutsideCapability, line: 2, outside)),
        Case(
            name: "product line after an access line",
            text: "capability pro\n  apple a\naccess paused no\n  apple b\n",
            expected: PolicyError(.productOutsideCapability, line: 4, outside)),
        Case(
            name: "duplicate capability", text: "capability pro\n  apple a\ncapability pro\n  apple b\n",
            expected: PolicyError(.duplicateCapability, line: 3, "capability pro is already defined on line 1")),
        Case(
            name: "bad yes/no", text: "capability pro\n  apple a\naccess paused maybe\n",
            expected: PolicyError(.badAccessValue, line: 3, "expected yes or no, got \"maybe\"")),
        Case(
            name: "yes/no is lowercase", text: "capability pro\n  apple a\naccess paused Yes\n",
            expected: PolicyError(.badAccessValue, line: 3, "expected yes or no, got \"Yes\"")),
        Case(
            name: "expired can never be yes", text: "capability pro\n  apple a\naccess expired yes\n",
            expected: PolicyError(.stateNeverAllowed, line: 3, "expired can never give access")),
        Case(
            name: "revoked can never be yes", text: "capability pro\n  apple a\naccess revoked yes\n",
            expected: PolicyError(.stateNeverAllowed, line: 3, "revoked can never give access")),
        Case(
            name: "pending can never be yes", text: "capability pro\n  apple a\naccess pending yes\n",
            expected: PolicyError(.stateNeverAllowed, line: 3, "pending can never give access")),
        Case(
            name: "duplicate access line", text: "capability pro\n  apple a\naccess paused no\naccess paused yes\n",
            expected: PolicyError(.duplicateAccess, line: 4, "access for paused is already set on line 3")),
        Case(
            name: "capability name starting with a digit", text: "capability 9lives\n  apple a\n",
            expected: PolicyError(.badCapabilityName, line: 1, "bad capability name \"9lives\": \(capabilityRule)")),
        Case(
            name: "capability name too long", text: "capability \(String(repeating: "a", count: 65))\n  apple a\n",
            expected: PolicyError(
                .badCapabilityName, line: 1,
                "bad capability name \"\(String(repeating: "a", count: 64))…\": \(capabilityRule)")),
        Case(
            name: "capability name with a non-ASCII letter", text: "capability prö\n  apple a\n",
            expected: PolicyError(.badCapabilityName, line: 1, "bad capability name \"prö\": \(capabilityRule)")),
        Case(
            name: "product id with a slash", text: "capability pro\n  apple com/example\n",
            expected: PolicyError(.badProductID, line: 2, "bad product id \"com/example\": \(productRule)")),
        Case(
            name: "product id too long", text: "capability pro\n  google \(String(repeating: "p", count: 151))\n",
            expected: PolicyError(
                .badProductID, line: 2, "bad product id \"\(String(repeating: "p", count: 64))…\": \(productRule)")),
        Case(
            name: "empty product id before a base plan", text: "capability pro\n  google :annual\n",
            expected: PolicyError(.badProductID, line: 2, "bad product id \"\": \(productRule)")),
        Case(
            name: "base plan with capitals", text: "capability pro\n  google pro:Annual\n",
            expected: PolicyError(.badBasePlanID, line: 2, "bad base plan id \"Annual\": \(basePlanRule)")),
        Case(
            name: "empty base plan", text: "capability pro\n  google pro:\n",
            expected: PolicyError(.badBasePlanID, line: 2, "bad base plan id \"\": \(basePlanRule)")),
        Case(
            name: "base plan on an Apple product", text: "capability pro\n  apple com.example.pro:annual\n",
            expected: PolicyError(
                .badBasePlanID, line: 2, "apple products have no base plan: \"com.example.pro:annual\"")),
        Case(
            name: "empty file", text: "",
            expected: PolicyError(.noCapabilities, line: nil, "the policy defines no capability")),
        Case(
            name: "only comments and rules", text: "# nothing yet\naccess paused no\n",
            expected: PolicyError(.noCapabilities, line: nil, "the policy defines no capability")),
    ]

    @Test("each problem is reported with its line and what is wrong", arguments: cases)
    func problem(_ example: Case) {
        #expect(throws: example.expected) { try ProductPolicy(parsing: example.text) }
    }

    @Test("a file over 1 MiB or over 100,000 lines is refused; 100,000 lines are fine")
    func limits() throws {
        let large = [UInt8](repeating: UInt8(ascii: "#"), count: ProductPolicy.maximumBytes + 1)
        #expect(throws: PolicyError(.tooLarge, line: nil, "the file is larger than 1048576 bytes")) {
            try ProductPolicy(parsing: large)
        }
        let head = "capability pro\n  apple a\n"
        let fits = head + String(repeating: "#\n", count: ProductPolicy.maximumLines - 2)
        #expect(try ProductPolicy(parsing: fits).capabilityCount == 1)
        #expect(throws: PolicyError(.tooLarge, line: 100_001, "the file has more than 100000 lines")) {
            try ProductPolicy(parsing: fits + "#\n")
        }
    }

    @Test("the description names the file and the line")
    func description() {
        let error = PolicyError(.unknownState, line: 3, "unknown state \"grace\"")
        #expect(error.description == "line 3: unknown state \"grace\"")
        #expect(
            PolicyError(.unknownState, line: 3, "unknown state \"grace\"", path: "/etc/policy.conf").description
                == "/etc/policy.conf, line 3: unknown state \"grace\"")
        #expect(PolicyError(.tooLarge, line: nil, "too big", path: "p").description == "p: too big")
        #expect(PolicyError.Code.productOutsideCapability.description == "product_outside_capability")
    }

    @Test("a policy built in code is checked by the same rules")
    func builtInCode() {
        #expect(throws: PolicyError(.noCapabilities, line: nil, "the policy defines no capability")) {
            try ProductPolicy(capabilities: [:])
        }
        #expect(throws: PolicyError(.emptyCapability, line: nil, "capability pro lists no products")) {
            try ProductPolicy(capabilities: ["pro": []])
        }
        #expect(
            throws: PolicyError(.badCapabilityName, line: nil, "bad capability name \"p r\": \(Self.capabilityRule)")
        ) {
            try ProductPolicy(capabilities: ["p r": [.apple("a")]])
        }
        #expect(throws: PolicyError(.badProductID, line: nil, "bad product id \"a:b\": \(Self.productRule)")) {
            try ProductPolicy(capabilities: ["pro": [.apple("a:b")]])
        }
        #expect(
            throws: PolicyError(.duplicateProduct, line: nil, "google pro:annual is listed twice in capability pro")
        ) {
            try ProductPolicy(capabilities: [
                "pro": [.google("pro", basePlan: "annual"), .google("pro", basePlan: "annual")]
            ])
        }
        #expect(throws: PolicyError(.badBasePlanID, line: nil, "apple products have no base plan: a")) {
            try ProductPolicy(capabilities: ["pro": [StoreProduct(store: .apple, productID: "a", basePlanID: "x")]])
        }
        #expect(throws: PolicyError(.badBasePlanID, line: nil, "bad base plan id \"X\": \(Self.basePlanRule)")) {
            try ProductPolicy(capabilities: ["pro": [.google("a", basePlan: "X")]])
        }
    }
}
