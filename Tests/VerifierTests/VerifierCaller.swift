import Clients
import RPC

@testable import VerifierService

/// The verifier's RPC methods over `apple` and `google`, called in this process through the RPC
/// layer (the same admission and status mapping as a call over TCP, and no port): what a test
/// sees is the status and message a caller gets.
func verifierClient(apple: AppleAdapter? = nil, google: GoogleAdapter? = nil) throws -> VerifierClient {
    let router = RPCRouter()
    VerifierMethods.register(on: router, apple: apple, google: google)
    let server = try RPCServer(configuration: RPCServerConfiguration(), router: router)
    return VerifierClient(InProcessTransport(server: server))
}
