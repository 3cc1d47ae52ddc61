import COpenSSL

/// An in-memory OpenSSL `BIO` that owns a copy of whatever is written to it.
final class MemoryBIO {
    private let handle: OpaquePointer

    /// An empty buffer to write into.
    init() throws(CryptoError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .openSSL("BIO_new failed") }
        handle = bio
    }

    /// A buffer holding a copy of `bytes`, to read from.
    convenience init(bytes: some Collection<UInt8>) throws(CryptoError) {
        try self.init()
        let copy = Array(bytes)
        guard copy.isEmpty || BIO_write(handle, copy, Int32(copy.count)) == Int32(copy.count) else {
            throw .openSSL("BIO_write failed")
        }
    }

    deinit { BIO_free(handle) }

    /// Lends the `BIO*` for the duration of `body`.
    func withHandle<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T {
        defer { withExtendedLifetime(self) {} }
        return try body(handle)
    }

    /// Everything written so far and not yet read, as UTF-8 text.
    func readString() -> String {
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(handle)))
        let count = bytes.isEmpty ? 0 : BIO_read(handle, &bytes, Int32(bytes.count))
        return String(decoding: bytes.prefix(max(0, Int(count))), as: UTF8.self)
    }
}
