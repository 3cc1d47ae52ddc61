import Glibc

extension ProductPolicy {
    /// The policy in the file at `path`. Reads at most `maximumBytes` and one byte more, so a
    /// huge file is refused without being read. Blocks the calling thread while it reads.
    /// Throws `PolicyError` (with `path`): `unreadable` with the system's reason, or the first
    /// problem in the file with its line.
    public static func load(path: String) throws(PolicyError) -> ProductPolicy {
        let bytes: [UInt8]
        do throws(PolicyError) {
            bytes = try readFile(path, limit: maximumBytes + 1)
        } catch {
            throw error.reading(path)
        }
        do throws(PolicyError) {
            return try ProductPolicy(parsing: bytes)
        } catch {
            throw error.reading(path)
        }
    }

    /// Up to `limit` bytes of the file at `path`.
    private static func readFile(_ path: String, limit: Int) throws(PolicyError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PolicyError(.unreadable, line: nil, "cannot open: \(systemError())") }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: limit)
        var filled = 0
        while filled < limit {
            let count = bytes.withUnsafeMutableBytes { buffer in
                read(fd, buffer.baseAddress! + filled, limit - filled)
            }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw PolicyError(.unreadable, line: nil, "cannot read: \(systemError())")
            }
            filled += count
        }
        bytes.removeLast(limit - filled)
        return bytes
    }

    private static func systemError() -> String { String(cString: strerror(errno)) }
}
