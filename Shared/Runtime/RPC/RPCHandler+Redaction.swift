public import Wire

/// What a caller with the read-only role (`RPC_READ_ONLY`) is answered: the method's answer as
/// `ProtoMessage.redacted()` shows it. A typed registration redacts its typed answer; what is
/// here redacts an answer that is already bytes (a raw handler registered by its typed
/// descriptor, a call handed off to answer later), by decoding it as the method's response.
extension RPCHandler {
    /// This handler with each answer decoded as `Response`, redacted and encoded again; nil for a
    /// server stream, which no read-only caller may call (no stream changes nothing).
    func redacting<Response: ProtoMessage>(_: Response.Type) -> RPCHandler? {
        switch self {
        case .inline(let handler):
            return .inline({ bytes, output in
                var answer: [UInt8] = []
                do {
                    try handler(bytes, &answer)
                } catch let later as RPCHandOff {
                    throw later.redacting(Response.self)
                }
                try Response(serialized: answer).redacted().serialize(appendingTo: &output)
            })
        case .unary(let handler):
            return .unary({ context, bytes in
                try Response(serialized: try await handler(context, bytes)).redacted().serialized()
            })
        case .deferred(let handler):
            return .deferred({ context, bytes, responder in
                handler(context, bytes, responder.redacting(Response.self))
            })
        case .serverStream:
            return nil
        }
    }
}

extension RPCHandOff {
    /// The same hand-off, answering through a responder that redacts the answer as `Response`.
    func redacting<Response: ProtoMessage>(_: Response.Type) -> RPCHandOff {
        let start = self.start
        return RPCHandOff { context, responder in start(context, responder.redacting(Response.self)) }
    }
}

extension RPCResponder {
    /// A responder that answers this one with the answer decoded as `Response` and redacted.
    func redacting<Response: ProtoMessage>(_: Response.Type) -> RPCResponder {
        RPCResponder { result in
            switch result {
            case .success(let bytes):
                do {
                    self.succeed(try Response(serialized: bytes).redacted().serialized())
                } catch {
                    self.fail(error)
                }
            case .failure(let error): self.fail(error)
            }
        }
    }
}
