import Model

/// Reads the policy file format (documented on `ProductPolicy`) line by line, and checks the
/// names in it. Every problem is a `PolicyError` naming the line.
struct PolicyFileParser {
    /// A `capability` block as read: its name, its line, and its products in file order.
    struct Block {
        var name: String
        var line: Int
        var products: [StoreProduct] = []
        var productLines: [StoreProduct: Int] = [:]
    }

    /// Each product's `duration` (milliseconds) and the line that gave it.
    private(set) var durations: [StoreProduct: (milliseconds: Int64, line: Int)] = [:]

    private(set) var blocks: [Block] = []
    private(set) var access = AccessRules.default
    private var open: Block?
    private var capabilityLines: [String: Int] = [:]
    private var accessLines: [SubscriptionState: Int] = [:]

    /// The capabilities and rules of the policy file `bytes`.
    static func parse(_ bytes: [UInt8]) throws(PolicyError) -> (
        blocks: [Block], access: AccessRules, durations: [StoreProduct: Int64]
    ) {
        guard bytes.count <= ProductPolicy.maximumBytes else {
            throw PolicyError(.tooLarge, line: nil, "the file is larger than \(ProductPolicy.maximumBytes) bytes")
        }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        if lines.count > ProductPolicy.maximumLines {
            throw PolicyError(
                .tooLarge, line: ProductPolicy.maximumLines + 1,
                "the file has more than \(ProductPolicy.maximumLines) lines")
        }
        var parser = PolicyFileParser()
        for (index, line) in lines.enumerated() {
            try parser.read(words(of: line), line: index + 1)
        }
        try parser.close()
        guard !parser.blocks.isEmpty else {
            throw PolicyError(.noCapabilities, line: nil, "the policy defines no capability")
        }
        return (parser.blocks, parser.access, parser.durations.mapValues(\.milliseconds))
    }

    /// The words of one line: what precedes a `#`, split at spaces, tabs and carriage returns.
    private static func words(of line: ArraySlice<UInt8>) -> [String] {
        let content = line.prefix { $0 != UInt8(ascii: "#") }
        return content.split { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
            .map { String(decoding: $0, as: UTF8.self) }
    }

    private mutating func read(_ words: [String], line: Int) throws(PolicyError) {
        guard let keyword = words.first else { return }
        switch keyword {
        case "capability":
            try close()
            guard words.count == 2 else {
                throw PolicyError(.malformed, line: line, "malformed line: expected \"capability NAME\"")
            }
            let name = words[1]
            if let problem = Self.capabilityNameProblem(name) {
                throw PolicyError(.badCapabilityName, line: line, problem)
            }
            if let earlier = capabilityLines[name] {
                throw PolicyError(
                    .duplicateCapability, line: line, "capability \(name) is already defined on line \(earlier)")
            }
            capabilityLines[name] = line
            open = Block(name: name, line: line)
        case "access":
            try close()
            try readAccess(words, line: line)
        case "apple", "google":
            guard var block = open else {
                throw PolicyError(
                    .productOutsideCapability, line: line,
                    "product line outside a capability: products follow a \"capability NAME\" line")
            }
            guard words.count == 2 || (words.count == 4 && words[2] == "duration") else {
                throw PolicyError(
                    .malformed, line: line,
                    keyword == "apple"
                        ? "malformed line: expected \"apple PRODUCT_ID [duration N(h|d|w)]\""
                        : "malformed line: expected \"google PRODUCT_ID[:BASE_PLAN_ID] [duration N(h|d|w)]\"")
            }
            let product = try Self.product(store: keyword == "apple" ? .apple : .google, words[1], line: line)
            if words.count == 4 {
                let milliseconds = try Self.duration(words[3], line: line)
                if let earlier = durations[product], earlier.milliseconds != milliseconds {
                    throw PolicyError(
                        .badDuration, line: line,
                        "\(product) already has duration \(Self.durationText(earlier.milliseconds)) on line \(earlier.line)"
                    )
                }
                durations[product] = (milliseconds, line)
            }
            if let earlier = block.productLines[product] {
                throw PolicyError(
                    .duplicateProduct, line: line,
                    "\(product) is already listed in capability \(block.name) on line \(earlier)")
            }
            block.productLines[product] = line
            block.products.append(product)
            open = block
        default:
            if open != nil && words.count == 2 {
                throw PolicyError(
                    .unknownStore, line: line, "unknown store \(Self.quoted(keyword)) (expected apple or google)")
            }
            throw PolicyError(
                .malformed, line: line,
                "malformed line: expected capability, access, apple or google, got \(Self.quoted(keyword))")
        }
    }

    private mutating func readAccess(_ words: [String], line: Int) throws(PolicyError) {
        guard words.count == 3 else {
            throw PolicyError(.malformed, line: line, "malformed line: expected \"access STATE yes|no\"")
        }
        guard let state = SubscriptionState.allCases.first(where: { $0.description == words[1] }) else {
            let names = SubscriptionState.allCases.map(\.description)
            let expected = names.dropLast().joined(separator: ", ") + " or " + names.last!
            throw PolicyError(
                .unknownState, line: line, "unknown state \(Self.quoted(words[1])) (expected \(expected))")
        }
        let allowed: Bool
        switch words[2] {
        case "yes": allowed = true
        case "no": allowed = false
        default:
            throw PolicyError(.badAccessValue, line: line, "expected yes or no, got \(Self.quoted(words[2]))")
        }
        if let earlier = accessLines[state] {
            throw PolicyError(.duplicateAccess, line: line, "access for \(state) is already set on line \(earlier)")
        }
        if allowed && !AccessRules.canAllow(state) {
            throw PolicyError(.stateNeverAllowed, line: line, "\(state) can never give access")
        }
        accessLines[state] = line
        access = access.setting(state, allowed: allowed)
    }

    /// Ends the open `capability` block, which must have listed a product.
    private mutating func close() throws(PolicyError) {
        guard let block = open else { return }
        open = nil
        guard !block.products.isEmpty else {
            throw PolicyError(.emptyCapability, line: block.line, "capability \(block.name) lists no products")
        }
        blocks.append(block)
    }

    /// The product a product line's second word names.
    private static func product(store: Store, _ word: String, line: Int) throws(PolicyError) -> StoreProduct {
        let parts = word.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let productID = String(parts[0])
        if let problem = productIDProblem(productID) { throw PolicyError(.badProductID, line: line, problem) }
        guard parts.count == 2 else { return StoreProduct(store: store, productID: productID) }
        let basePlanID = String(parts[1])
        if store == .apple {
            throw PolicyError(.badBasePlanID, line: line, "apple products have no base plan: \(quoted(word))")
        }
        if let problem = basePlanIDProblem(basePlanID) { throw PolicyError(.badBasePlanID, line: line, problem) }
        return StoreProduct(store: store, productID: productID, basePlanID: basePlanID)
    }

    /// The milliseconds of a duration word: a whole number of hours (`12h`), days (`90d`) or
    /// weeks (`4w`), from 1 hour to 100 years.
    static func duration(_ word: String, line: Int) throws(PolicyError) -> Int64 {
        let units: [Character: Int64] = ["h": 3_600_000, "d": 86_400_000, "w": 604_800_000]
        let maximum: Int64 = 36_525 * 86_400_000
        guard let unit = word.last.flatMap({ units[$0] }), let count = Int64(word.dropLast()), count > 0,
            word.dropLast().allSatisfy(\.isASCII), count <= maximum / unit
        else {
            throw PolicyError(
                .badDuration, line: line,
                "bad duration \(quoted(word)): a whole number of hours, days or weeks (12h, 90d, 4w), at most 100 years"
            )
        }
        return count * unit
    }

    /// A duration as the canonical form writes it: in the largest unit that divides it.
    static func durationText(_ milliseconds: Int64) -> String {
        if milliseconds % 604_800_000 == 0 { return "\(milliseconds / 604_800_000)w" }
        if milliseconds % 86_400_000 == 0 { return "\(milliseconds / 86_400_000)d" }
        return "\(milliseconds / 3_600_000)h"
    }

    // MARK: Names

    /// The longest capability name.
    static let maximumCapabilityLength = 64
    /// The longest product id (Apple allows 100 characters, Google 40 for one-time products).
    static let maximumProductIDLength = 150
    /// The longest Google base plan id.
    static let maximumBasePlanIDLength = 63

    /// What is wrong with a capability name, or `nil`: 1 to 64 ASCII letters, digits, `_`, `.`
    /// or `-`, starting with a letter.
    static func capabilityNameProblem(_ name: String) -> String? {
        if fits(name, maximum: maximumCapabilityLength, first: isLetter, rest: isNameByte) { return nil }
        return "bad capability name \(quoted(name)): 1 to \(maximumCapabilityLength) letters, digits, '_', '.' or '-', "
            + "starting with a letter"
    }

    /// What is wrong with a product id, or `nil`: 1 to 150 ASCII letters, digits, `_`, `.` or
    /// `-`, starting with a letter or digit.
    static func productIDProblem(_ id: String) -> String? {
        if fits(id, maximum: maximumProductIDLength, first: isAlphanumeric, rest: isNameByte) { return nil }
        return "bad product id \(quoted(id)): 1 to \(maximumProductIDLength) letters, digits, '_', '.' or '-', "
            + "starting with a letter or digit"
    }

    /// What is wrong with a Google base plan id, or `nil`: 1 to 63 lowercase ASCII letters,
    /// digits or `-`, starting with a letter or digit (Google's own rule).
    static func basePlanIDProblem(_ id: String) -> String? {
        if fits(id, maximum: maximumBasePlanIDLength, first: isLowercaseOrDigit, rest: isBasePlanByte) { return nil }
        return "bad base plan id \(quoted(id)): 1 to \(maximumBasePlanIDLength) lowercase letters, digits or '-', "
            + "starting with a letter or digit"
    }

    /// Whether `text` has 1 to `maximum` bytes, the first passing `first` and the others `rest`.
    private static func fits(
        _ text: String, maximum: Int, first: (UInt8) -> Bool, rest: (UInt8) -> Bool
    ) -> Bool {
        let bytes = text.utf8
        guard let head = bytes.first, bytes.count <= maximum, first(head) else { return false }
        return bytes.dropFirst().allSatisfy(rest)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }
    private static func isBasePlanByte(_ byte: UInt8) -> Bool { isLowercaseOrDigit(byte) || byte == UInt8(ascii: "-") }
    private static func isAlphanumeric(_ byte: UInt8) -> Bool { isLetter(byte) || isDigit(byte) }
    private static func isLowercaseOrDigit(_ byte: UInt8) -> Bool { isLowercase(byte) || isDigit(byte) }
    private static func isLetter(_ byte: UInt8) -> Bool {
        isLowercase(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
    private static func isLowercase(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// `text` in double quotes, cut to 64 characters so that a message stays short.
    static func quoted(_ text: String) -> String {
        text.count <= 64 ? "\"\(text)\"" : "\"\(text.prefix(64))…\""
    }
}
