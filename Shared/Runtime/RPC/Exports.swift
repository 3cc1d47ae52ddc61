@_exported public import class Observability.ManualClock
// The clock is part of the RPC runtime's interface (deadlines, request contexts, configuration).
@_exported public import protocol Observability.ServiceClock
@_exported public import struct Observability.SystemClock
