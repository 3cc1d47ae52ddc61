import Glibc

/// Flush (cache-flush) requests completed by the block device holding a path, from
/// /sys/dev/block/MAJOR:MINOR/stat (field 16, Linux 5.5 and later). Every durable commit
/// (fdatasync) issues at least one, so the count over a phase, set against the known commits
/// of a raw-engine run, estimates how many commits the ledger made. Other writers on the
/// same device add to it: it is evidence, not an exact count.
struct DeviceFlushes {
    private let statPath: String

    /// nil when the device or its flush counter cannot be found (tmpfs, an old kernel).
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let major = (info.st_dev >> 8) & 0xfff | ((info.st_dev >> 32) & ~0xfff)
        let minor = (info.st_dev & 0xff) | ((info.st_dev >> 12) & ~0xff)
        statPath = "/sys/dev/block/\(major):\(minor)/stat"
        guard count() != nil else { return nil }
    }

    /// Flushes completed so far; nil when the counter cannot be read.
    func count() -> Int? {
        guard let file = fopen(statPath, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 512)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fields = line.split(separator: " ")
        return fields.count > 15 ? Int(fields[15]) : nil
    }
}
