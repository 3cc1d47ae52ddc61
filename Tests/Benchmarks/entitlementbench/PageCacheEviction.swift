import BenchSupport
import Foundation
import Glibc

/// Empties the page cache of the ledger's database before the first instance starts, so that
/// its start reads the snapshot from the disk as a ledger whose pages were never read does:
/// `sync; echo 3 > /proc/sys/vm/drop_caches` where the machine lets us, otherwise each file's
/// clean pages dropped with `posix_fadvise(POSIX_FADV_DONTNEED)` after an `fdatasync`.
enum PageCacheEviction {
    /// How the cache was emptied, as the report shows it.
    enum Method: String {
        case dropCaches = "drop_caches"
        case fadvise = "posix_fadvise(DONTNEED)"
    }

    /// Empties the cache of `files` (those that exist) and says how. Throws when neither way
    /// works.
    static func evict(_ files: [String]) throws(BenchError) -> Method {
        sync()
        if let control = FileHandle(forWritingAtPath: "/proc/sys/vm/drop_caches"),
            (try? control.write(contentsOf: Data("3\n".utf8))) != nil
        {
            try? control.close()
            return .dropCaches
        }
        for path in files where FileManager.default.fileExists(atPath: path) {
            let descriptor = open(path, O_RDONLY)
            guard descriptor >= 0 else { throw BenchError("opening \(path) to evict its pages: errno \(errno)") }
            defer { close(descriptor) }
            // Dirty pages stay in the cache: written back first, then dropped.
            let synced = fdatasync(descriptor)
            let advised = posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
            guard synced == 0, advised == 0 else {
                throw BenchError("evicting \(path) from the page cache: errno \(synced == 0 ? advised : errno)")
            }
        }
        return .fadvise
    }

    /// Bytes of `path` in the page cache (`mincore` over a read-only mapping), nil when it
    /// cannot tell.
    static func residentBytes(of path: String) -> Int? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size > 0 else { return 0 }
        let size = Int(status.st_size)
        // The mapping is only looked at, never touched: no page is read in by it.
        guard let mapping = mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0), mapping != MAP_FAILED else {
            return nil
        }
        defer { munmap(mapping, size) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (size + pageSize - 1) / pageSize)
        guard mincore(mapping, size, &vector) == 0 else { return nil }
        return vector.reduce(0) { $0 + Int($1 & 1) } * pageSize
    }
}
