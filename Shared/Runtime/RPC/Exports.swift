// The monotonic clock is part of the RPC runtime's interface (deadlines, request contexts).
@_exported public import enum Observability.MonotonicClock
