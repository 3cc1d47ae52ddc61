import Glibc

/// Why a checkpoint could not be written or read.
public struct CheckpointError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) { self.description = description }

    static func system(_ what: String, _ path: String) -> CheckpointError {
        CheckpointError("\(what) \(path): \(String(cString: strerror(errno)))")
    }
}

/// The checkpoint's checksum: a 64-bit hash of each piece written (four independent lanes of
/// multiply-rotate rounds, so that it runs at memory speed), folded into one digest in order.
enum CheckpointHash {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63

    private static func rotate(_ value: UInt64, _ bits: UInt64) -> UInt64 { value << bits | value >> (64 - bits) }

    private static func round(_ accumulator: UInt64, _ word: UInt64) -> UInt64 {
        rotate(accumulator &+ word &* p2, 31) &* p1
    }

    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard let base = bytes.baseAddress else { return p3 }
        let count = bytes.count
        var a = p1 &+ p2
        var b = p2
        var c: UInt64 = 0
        var d = 0 &- p1
        var at = 0
        while at + 32 <= count {
            a = round(a, base.loadUnaligned(fromByteOffset: at, as: UInt64.self))
            b = round(b, base.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self))
            c = round(c, base.loadUnaligned(fromByteOffset: at + 16, as: UInt64.self))
            d = round(d, base.loadUnaligned(fromByteOffset: at + 24, as: UInt64.self))
            at += 32
        }
        var hash = rotate(a, 1) &+ rotate(b, 7) &+ rotate(c, 12) &+ rotate(d, 18) &+ UInt64(count)
        while at + 8 <= count {
            hash = rotate(hash ^ round(0, base.loadUnaligned(fromByteOffset: at, as: UInt64.self)), 27) &* p1 &+ p4
            at += 8
        }
        while at < count {
            hash = rotate(hash ^ UInt64(base.load(fromByteOffset: at, as: UInt8.self)) &* p3, 11) &* p1
            at += 1
        }
        hash ^= hash >> 33
        hash = hash &* p2
        hash ^= hash >> 29
        hash = hash &* p3
        return hash ^ hash >> 32
    }

    static func fold(_ digest: UInt64, _ piece: UInt64) -> UInt64 { rotate(digest ^ piece, 23) &* p1 &+ p4 }
}

/// Writes a checkpoint file: small values (little-endian 64-bit integers and length-prefixed
/// bytes) gathered in a buffer, and regions of table memory written as they sit. Every piece is
/// hashed into the digest that `finish` writes last.
struct CheckpointWriter: ~Copyable {
    private let descriptor: Int32
    private let path: String
    private var small: [UInt8] = []
    private var digest: UInt64 = 0
    private(set) var bytesWritten = 0

    /// Creates (or truncates) the file at `path`.
    init(path: String) throws(CheckpointError) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .system("creating", path) }
        small.reserveCapacity(1 << 16)
    }

    deinit { close(descriptor) }

    mutating func integer(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { small.append(contentsOf: $0) }
    }

    mutating func integer(_ value: Int64) { integer(UInt64(bitPattern: value)) }

    mutating func bytes(_ bytes: some Collection<UInt8>) {
        integer(UInt64(bytes.count))
        small.append(contentsOf: bytes)
    }

    mutating func string(_ text: String) { bytes(text.utf8) }

    mutating func optionalString(_ text: String?) {
        integer(UInt64(text == nil ? 0 : 1))
        if let text { string(text) }
    }

    /// Writes `memory`'s length, then the bytes themselves.
    mutating func region(_ memory: UnsafeRawBufferPointer) throws(CheckpointError) {
        integer(UInt64(memory.count))
        try flushSmall()
        try put(memory)
    }

    /// Writes what is buffered and the digest, and makes it durable.
    mutating func finish() throws(CheckpointError) {
        try flushSmall()
        let trailer = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
        defer { trailer.deallocate() }
        trailer.storeBytes(of: digest.littleEndian, as: UInt64.self)
        try write(UnsafeRawBufferPointer(start: trailer, count: 8))
        guard fsync(descriptor) == 0 else { throw .system("syncing", path) }
    }

    private mutating func flushSmall() throws(CheckpointError) {
        guard !small.isEmpty else { return }
        let pending = UnsafeMutableRawBufferPointer.allocate(byteCount: small.count, alignment: 8)
        defer { pending.deallocate() }
        pending.copyBytes(from: small)
        small.removeAll(keepingCapacity: true)
        try put(UnsafeRawBufferPointer(pending))
    }

    private mutating func put(_ bytes: UnsafeRawBufferPointer) throws(CheckpointError) {
        digest = CheckpointHash.fold(digest, CheckpointHash.hash(bytes))
        try write(bytes)
    }

    private mutating func write(_ bytes: UnsafeRawBufferPointer) throws(CheckpointError) {
        var at = 0
        while at < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + at, min(bytes.count - at, 1 << 30))
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw .system("writing", path) }
            at += written
        }
        bytesWritten += bytes.count
    }
}

/// Reads what a `CheckpointWriter` wrote, in the same order, checking the digest as it goes
/// (`finish`). Regions are read straight into the memory they fill.
struct CheckpointReader: ~Copyable {
    private let descriptor: Int32
    private let path: String
    private var buffer: UnsafeMutableRawPointer
    private let bufferSize = 1 << 20
    private let scratch = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
    /// Unread bytes of `buffer`: `start..<end`.
    private var start = 0
    private var end = 0
    /// The small values read since the last region, to hash as the writer did.
    private var small: [UInt8] = []
    private var digest: UInt64 = 0
    private(set) var bytesRead = 0

    /// Opens the file at `path`; nil when there is none.
    init?(path: String) throws(CheckpointError) {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw .system("opening", path)
        }
        buffer = .allocate(byteCount: bufferSize, alignment: 64)
        small.reserveCapacity(1 << 16)
    }

    deinit {
        buffer.deallocate()
        scratch.deallocate()
        close(descriptor)
    }

    mutating func integer() throws(CheckpointError) -> UInt64 {
        try take(scratch, 8, small: true)
        return UInt64(littleEndian: scratch.loadUnaligned(as: UInt64.self))
    }

    mutating func signed() throws(CheckpointError) -> Int64 { Int64(bitPattern: try integer()) }

    /// An integer that must be at most `limit`, as a count or size.
    mutating func count(limit: Int) throws(CheckpointError) -> Int {
        let value = try integer()
        guard value <= UInt64(limit) else { throw CheckpointError("a count of \(value) where at most \(limit) fits") }
        return Int(value)
    }

    mutating func bytes(limit: Int = 1 << 20) throws(CheckpointError) -> [UInt8] {
        let count = try count(limit: limit)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 8)
        defer { memory.deallocate() }
        try take(memory, count, small: true)
        return Array(UnsafeRawBufferPointer(start: memory, count: count))
    }

    mutating func string() throws(CheckpointError) -> String {
        String(decoding: try bytes(), as: UTF8.self)
    }

    mutating func optionalString() throws(CheckpointError) -> String? {
        try count(limit: 1) == 1 ? try string() : nil
    }

    /// Reads a region of exactly `count` bytes into `memory`.
    mutating func region(into memory: UnsafeMutableRawPointer, count: Int) throws(CheckpointError) {
        let stored = try region(into: memory, limit: count)
        guard stored == count else { throw CheckpointError("a region of \(stored) bytes where \(count) were due") }
    }

    /// Reads a region of at most `limit` bytes into `memory` and returns its length.
    mutating func region(into memory: UnsafeMutableRawPointer, limit: Int) throws(CheckpointError) -> Int {
        let count = try self.count(limit: limit)
        hashSmall()
        try take(memory, count, small: false)
        digest = CheckpointHash.fold(digest, CheckpointHash.hash(UnsafeRawBufferPointer(start: memory, count: count)))
        return count
    }

    /// Reads the digest and checks it against what was read, and that nothing follows.
    mutating func finish() throws(CheckpointError) {
        hashSmall()
        let expected = digest
        try take(scratch, 8, small: false)
        guard UInt64(littleEndian: scratch.loadUnaligned(as: UInt64.self)) == expected else {
            throw CheckpointError("the checksum does not match: the file is damaged")
        }
        var probe: UInt8 = 0
        guard start == end, Glibc.read(descriptor, &probe, 1) == 0 else {
            throw CheckpointError("bytes follow the checksum")
        }
    }

    private mutating func hashSmall() {
        guard !small.isEmpty else { return }
        digest = small.withUnsafeBytes { CheckpointHash.fold(digest, CheckpointHash.hash($0)) }
        small.removeAll(keepingCapacity: true)
    }

    /// Copies the next `count` bytes of the file to `destination`: buffered bytes first, then
    /// (for a large read) straight from the file.
    private mutating func take(_ destination: UnsafeMutableRawPointer, _ count: Int, small isSmall: Bool)
        throws(CheckpointError)
    {
        var done = 0
        while done < count {
            if start == end {
                if count - done >= bufferSize {
                    let got = Glibc.read(descriptor, destination + done, min(count - done, 1 << 30))
                    if got < 0 && errno == EINTR { continue }
                    guard got > 0 else {
                        throw got == 0 ? CheckpointError("the file ends early") : .system("reading", path)
                    }
                    done += got
                    bytesRead += got
                    continue
                }
                let got = Glibc.read(descriptor, buffer, bufferSize)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else {
                    throw got == 0 ? CheckpointError("the file ends early") : .system("reading", path)
                }
                start = 0
                end = got
                bytesRead += got
            }
            let piece = min(end - start, count - done)
            (destination + done).copyMemory(from: buffer + start, byteCount: piece)
            if isSmall {
                small.append(contentsOf: UnsafeRawBufferPointer(start: buffer + start, count: piece))
            }
            start += piece
            done += piece
        }
    }
}
