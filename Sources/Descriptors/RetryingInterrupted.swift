import Glibc

/// Makes `call` (a system call's wrapper: below zero on failure, errno set) again for as
/// long as it fails with EINTR, and returns what it returned last. A signal caught while the
/// call waited is no failure of the call: a handler installed without SA_RESTART, and the
/// calls the kernel never restarts (poll, epoll_wait, nanosleep), end it with EINTR. Any
/// other failure is returned at once, errno still its.
///
/// Inlined, with a non-escaping closure: it costs the hot paths (a tunnel's reads and
/// writes, once per packet or batch) nothing over the loop written by hand.
@inlinable @inline(__always)
public func retryingInterrupted<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result >= 0 || errno != EINTR { return result }
    }
}
