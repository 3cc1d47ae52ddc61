import RPC
import Wire

extension CommandRunner {
    /// Runs `find`: Verifier/Find, then with an entitlement transport ListEntitlements for each
    /// account found. Human lines (`OutputText.found`), or with `--json` each answer's compact
    /// JSON: the Find answer, then one ListEntitlements answer per account.
    func run(
        _ command: FindCommand, transport: any ClientTransport, entitlement: (any ClientTransport)?,
        options: CallOptions
    ) async throws(SubctlError) {
        let found = try await transport.call(
            FindCommand.method, command.request, as: FindResponse.self, timeout: options.timeout)
        var access: [(account: String, answer: (response: ListEntitlementsResponse, bytes: [UInt8]))] = []
        if let entitlement, let entitlementOptions = command.entitlement {
            for account in found.response.accountIDs {
                access.append(
                    (
                        account,
                        try await entitlement.call(
                            FindCommand.listEntitlements, ListEntitlementsRequest(accountID: account),
                            as: ListEntitlementsResponse.self, timeout: entitlementOptions.timeout)
                    ))
            }
        }
        if options.json {
            write(try JSONMessages.decodeToJSON(found.bytes, as: FindResponse.protoName, pretty: false))
            for (_, answer) in access {
                write(
                    try JSONMessages.decodeToJSON(answer.bytes, as: ListEntitlementsResponse.protoName, pretty: false))
            }
            return
        }
        OutputText.found(command.request.value, found.response).forEach(write)
        for (account, answer) in access {
            OutputText.access(account, answer.response).forEach(write)
        }
    }
}
