import Synchronization
import Wire

/// The one answer of a deferred call (`RPCHandler.deferred`). Answer exactly once, from any
/// thread; later answers are ignored. A responder released without an answer answers INTERNAL,
/// so a forgotten path cannot leave its caller waiting until the deadline.
public final class RPCResponder: Sendable {
    private let deliver: @Sendable (Result<[UInt8], any Error>) -> Void
    private let answered = Atomic<Bool>(false)

    init(deliver: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        self.deliver = deliver
    }

    /// Answers with a serialized response message.
    public func succeed(_ payload: [UInt8]) { answer(.success(payload)) }

    /// Answers with an error: an `RPCError` keeps its status, anything else is mapped as a
    /// unary handler's error would be.
    public func fail(_ error: any Error) { answer(.failure(error)) }

    private func answer(_ result: Result<[UInt8], any Error>) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        deliver(result)
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            deliver(.failure(RPCError(.internal, "the method ended without an answer")))
        }
    }
}
