import Glibc

/// The engine's one lock: a pthread mutex reachable only through `with`, so every critical
/// section is a closure and no early return can leave it held. Synchronization's `Mutex`
/// would own the state itself, but the engine's state is a web of classes (peers, keypairs)
/// that the data path hands out of the critical section, which `Mutex.withLock`'s `sending`
/// result refuses in Swift 6 mode; the closure here is inlined, so a packet pays one
/// lock/unlock pair and no allocation, as before.
final class EngineLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    func with<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
