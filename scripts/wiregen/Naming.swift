/// How proto names become Swift and protoc-c names.
enum Naming {
    /// `idempotency_key` → `idempotencyKey`, `account_id` → `accountID`, `until_ms` →
    /// `untilMilliseconds`, `apple_transaction_ids` → `appleTransactionIDs`.
    static func swiftProperty(_ snake: String) -> String {
        let parts = snake.split(separator: "_").map { String($0).lowercased() }
        var result = ""
        for (index, part) in parts.enumerated() {
            if index == 0 {
                result += part
                continue
            }
            switch part {
            case "id": result += "ID"
            case "ids": result += "IDs"
            case "url": result += "URL"
            case "ms" where index == parts.count - 1: result += "Milliseconds"
            default: result += part.prefix(1).uppercased() + part.dropFirst()
            }
        }
        return keywords.contains(result) ? "`\(result)`" : result
    }

    /// `store_id` → `storeId`: protoc's proto3 JSON name (each `_` dropped, the letter after it
    /// upper case).
    static func lowerCamel(_ snake: String) -> String {
        var result = ""
        var upperNext = false
        for character in snake {
            if character == "_" {
                upperNext = true
            } else {
                result += upperNext ? character.uppercased() : String(character)
                upperNext = false
            }
        }
        return result
    }

    /// `accessReason` → `AccessReason`: a method's lowerCamel name in a namespace.
    static func lowerFirst(_ name: String) -> String {
        let result = name.prefix(1).lowercased() + name.dropFirst()
        return keywords.contains(result) ? "`\(result)`" : result
    }

    /// `InboxStatus` → `INBOX_STATUS`: the prefix every value of a proto enum carries.
    static func screamingSnake(_ camel: String) -> String {
        var result = ""
        for (index, character) in camel.enumerated() {
            if character.isUppercase && index > 0 { result += "_" }
            result += character.uppercased()
        }
        return result
    }

    /// `subscriptions.ledger.v1` + `CheckAccessRequest` → `Subscriptions__Ledger__V1__CheckAccessRequest`
    /// (protoc-c's struct name).
    static func cType(package: String, name: String) -> String {
        package.split(separator: ".").map { $0.prefix(1).uppercased() + $0.dropFirst() + "__" }.joined() + name
    }

    /// `subscriptions.ledger.v1` + `CheckAccessRequest` →
    /// `subscriptions__ledger__v1__check_access_request__init` (protoc-c's initializer).
    static func cInitializer(package: String, name: String) -> String {
        var lower = ""
        for (index, character) in name.enumerated() {
            if character.isUppercase && index > 0 { lower += "_" }
            lower += character.lowercased()
        }
        return package.split(separator: ".").map { $0.lowercased() + "__" }.joined() + lower + "__init"
    }

    /// protoc-c appends `_` to a field named like a C keyword.
    static func cField(_ name: String) -> String { cKeywords.contains(name) ? name + "_" : name }

    private static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "func", "import", "init", "inout", "let",
        "operator", "protocol", "struct", "subscript", "typealias", "var", "break", "case", "continue", "default",
        "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "switch", "where",
        "while", "as", "catch", "false", "is", "nil", "rethrows", "super", "self", "throw", "throws", "true", "try",
        "internal", "private", "public", "static", "fileprivate", "open",
    ]

    private static let cKeywords: Set<String> = [
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
        "float", "for", "goto", "if", "int", "long", "register", "return", "short", "signed", "sizeof", "static",
        "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    ]
}
