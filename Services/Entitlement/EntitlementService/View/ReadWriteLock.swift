import Glibc

/// A value behind a reader-writer lock: any number of readers at once, one writer alone, and a
/// waiting writer goes before new readers (so a stream of checks cannot starve the feed).
///
/// The checks on every event loop read the view at once; with a mutex they would queue behind
/// one another and sleep in the kernel.
///
/// The value lives behind a pointer rather than in a stored property: a reader then borrows it
/// in place, where reading a class's stored property would copy it (and retain every buffer
/// it holds) for each read.
final class ReadWriteLock<Value>: @unchecked Sendable {  // every access to `value` holds `lock`
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private let value: UnsafeMutablePointer<Value>

    init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        let status = pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
        precondition(status == 0, "pthread_rwlock_init failed: \(status)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value under the read lock.
    func read<T>(_ body: (borrowing Value) throws -> T) rethrows -> T {
        try readInPlace { try body($0.pointee) }
    }

    /// Runs `body` with the value's address under the read lock: for a hot path that must not
    /// copy the value (its accesses through `pointee` read it in place).
    func readInPlace<T>(_ body: (UnsafePointer<Value>) throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    /// Runs `body` with the value under the write lock.
    func write<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value.pointee)
    }
}
