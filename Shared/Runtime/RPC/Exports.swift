@_exported public import class Observability.ManualClock
// The clock is part of the RPC runtime's interface (deadlines, request contexts, configuration).
@_exported public import protocol Observability.ServiceClock
@_exported public import struct Observability.SystemClock
// A call's trace travels in its envelope and is part of its request context.
@_exported public import struct Observability.TraceContext
