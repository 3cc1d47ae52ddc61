import AppStore

extension SubctlCommand {
    /// Parses `apple SUBCOMMAND …` from the arguments after `apple`. Throws `usage` for a
    /// malformed command line; reads no file.
    static func parseApple(_ arguments: [String]) throws(SubctlError) -> SubctlCommand {
        let subcommands = "verify, extend, extend-status, set-token, refunds or consumption"
        guard let subcommand = arguments.first else {
            throw SubctlError(.usage, "apple needs a subcommand (\(subcommands))")
        }
        if appleOperations.contains(subcommand) { return try parseAppleOperation(arguments) }
        guard subcommand == "verify" else {
            throw SubctlError(.usage, "unknown apple command \"\(subcommand)\" (\(subcommands))")
        }
        let scanned = try scan(
            Array(arguments.dropFirst()), command: "apple verify",
            values: ["file", "root", "bundle", "env", "app-id", "kind"], repeatable: ["root"], flags: [],
            positionals: 0...1)
        let source: AppleVerifyOptions.Source
        switch (scanned.positionals.first, scanned.values["file"]) {
        case ("-"?, nil): source = .standardInput
        case (let jws?, nil): source = .argument(jws)
        case (nil, let path?) where !path.isEmpty: source = .file(path)
        case (_?, _?): throw SubctlError(.usage, "apple verify takes the JWS as an argument, - or --file, not two")
        default:
            throw SubctlError(
                .usage, "apple verify needs the JWS: as an argument, - for standard input, or --file PATH")
        }
        let roots = scanned.repeated["root"] ?? []
        guard !roots.isEmpty, !roots.contains("") else {
            throw SubctlError(.usage, "apple verify needs --root PATH (Apple Root CA - G3, .cer or .pem)")
        }
        guard let bundleID = scanned.values["bundle"], !bundleID.isEmpty else {
            throw SubctlError(.usage, "apple verify needs --bundle BUNDLE_ID")
        }
        guard let environmentText = scanned.values["env"] else {
            throw SubctlError(.usage, "apple verify needs --env Sandbox|Production|Xcode|LocalTesting")
        }
        guard
            let environment = AppleEnvironment.allCases.first(where: {
                $0.rawValue.lowercased() == environmentText.lowercased()
            })
        else {
            throw SubctlError(
                .usage, "--env expects Sandbox, Production, Xcode or LocalTesting, got \"\(environmentText)\"")
        }
        var appAppleID: Int64?
        if let text = scanned.values["app-id"] {
            guard let number = Int64(text), number > 0 else {
                throw SubctlError(.usage, "--app-id expects the app's Apple id, a positive number, got \"\(text)\"")
            }
            appAppleID = number
        }
        if environment == .production && appAppleID == nil {
            throw SubctlError(.usage, "--env Production needs --app-id (the app's Apple id, appAppleId)")
        }
        var kind: AppleVerifyOptions.Kind?
        if let text = scanned.values["kind"] {
            kind = AppleVerifyOptions.Kind(rawValue: text.lowercased())
            guard kind != nil else {
                throw SubctlError(.usage, "--kind expects notification, transaction or renewal, got \"\(text)\"")
            }
        }
        return .apple(
            .verify(
                AppleVerifyOptions(
                    source: source, rootPaths: roots, bundleID: bundleID, environment: environment,
                    appAppleID: appAppleID, kind: kind)))
    }
}
