internal import CZlib
public import Wire

/// gzip request bodies (`Content-Encoding: gzip`, which Connect clients such as Python's send
/// by default), inflated with zlib and never past a limit, so that a small body that expands
/// to gigabytes costs its sender, not us.
public enum Gzip {
    /// The inflated `bytes`. Throws INVALID_ARGUMENT for bytes that are not gzip (or end early),
    /// RESOURCE_EXHAUSTED once the output would pass `limit` bytes.
    public static func inflate(_ bytes: [UInt8], limit: Int) throws(RPCError) -> [UInt8] {
        var stream = z_stream()
        // 15 window bits, +16: a gzip header and trailer, not zlib's.
        guard inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw RPCError(.internal, "zlib could not start")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var input = bytes
        let status: Int32 = input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = UInt32(source.count)
            while true {
                let (result, produced) = chunk.withUnsafeMutableBufferPointer { target in
                    stream.next_out = target.baseAddress
                    stream.avail_out = UInt32(target.count)
                    let result = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (result, target.count - Int(stream.avail_out))
                }
                if output.count + produced > limit { return Z_BUF_ERROR - 100 }
                output += chunk[0..<produced]
                if result != Z_OK || (produced == 0 && stream.avail_in == 0) { return result }
            }
        }
        switch status {
        case Z_STREAM_END where stream.avail_in == 0: return output
        case Z_STREAM_END: throw RPCError(.invalidArgument, "the body has bytes after its gzip stream")
        case Z_BUF_ERROR - 100:
            throw RPCError(.resourceExhausted, "the gzip body inflates to more than \(limit) bytes")
        default:
            let reason = status == Z_OK || status == Z_BUF_ERROR ? "it ends early" : "zlib error \(status)"
            throw RPCError(.invalidArgument, "the body is not valid gzip: \(reason)")
        }
    }
}
