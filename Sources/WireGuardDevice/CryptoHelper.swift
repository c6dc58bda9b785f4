import CLinux
import Glibc
import Synchronization

/// A second thread for a loop's cryptography (wireguard-go's encryption and decryption
/// workers, for one batch at a time): the loop posts a batch of `count` jobs, then both
/// threads take chunks of it until none is left, and the loop waits for the helper's last
/// chunk. Jobs are taken, not assigned: when the other core is busy (here it runs the
/// other end, the kernel and iperf3) the loop simply does the whole batch itself.
///
/// Only the order-free part runs here (AEAD in place, each job owning its memory); the
/// engine steps before and after stay on the loop thread in the batch's order, so no
/// packet overtakes another and nothing on this path takes a lock or allocates.
final class CryptoHelper: @unchecked Sendable {
    /// Jobs per grab: a few packets, so the two threads finish close together.
    static let chunk = 4
    /// Below this many bytes of cryptography (about ten full-sized packets), waking the
    /// helper costs more than it saves: a batch of ACKs is done at once by the loop.
    static let minimumBytesToShare = 16_384

    private let work: (Range<Int>) -> Void
    /// The batch's generation (high 32 bits) and the next job to take (low 32 bits),
    /// changed together so a late helper can never take a job of a newer batch.
    private let cursor = Atomic<UInt64>(0)
    private let total = Atomic<Int>(0)
    private let completed = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// The helper sleeps on this between batches (a pthread condition: futex-backed).
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let posted = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var postedGeneration: UInt64 = 0
    private var generation: UInt64 = 0
    private var thread: LoopThread?
    /// Jobs the helper thread did (not the loop), for `get=stats`: proof the path is used.
    private let counter: HelperCounter

    /// `work(range)` does jobs `range` of the current batch; it runs on both threads at once
    /// (on disjoint ranges).
    init(name: String, counter: HelperCounter, work: @escaping (Range<Int>) -> Void) {
        self.work = work
        self.counter = counter
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(posted, nil)
        thread = LoopThread(name: name) { [self] in helperLoop() }
    }

    deinit {
        pthread_cond_destroy(posted)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        posted.deallocate()
    }

    /// Ends the helper thread and waits for it; from the owning loop, before it returns.
    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        pthread_mutex_lock(mutex)
        pthread_cond_signal(posted)
        pthread_mutex_unlock(mutex)
        thread?.join()
        thread = nil
    }

    /// Does jobs 0..<count (`bytes` of payload in all), with the helper if it is worth
    /// waking; returns when all are done.
    func run(_ count: Int, bytes: Int) {
        guard bytes >= Self.minimumBytesToShare, count > Self.chunk else {
            if count > 0 { work(0..<count) }
            return
        }
        generation &+= 1
        let mine = generation & 0xffff_ffff
        total.store(count, ordering: .relaxed)
        completed.store(0, ordering: .relaxed)
        cursor.store(mine << 32, ordering: .releasing)
        pthread_mutex_lock(mutex)
        postedGeneration = mine
        pthread_cond_signal(posted)
        pthread_mutex_unlock(mutex)
        takeJobs(generation: mine, helping: false)
        // The helper may still be inside a chunk it took: at most a few packets' work.
        while completed.load(ordering: .acquiring) < count { sched_yield() }
    }

    private func takeJobs(generation mine: UInt64, helping: Bool) {
        while let range = take(generation: mine) {
            work(range)
            if helping { counter.jobs.wrappingAdd(range.count, ordering: .relaxed) }
            completed.wrappingAdd(range.count, ordering: .releasing)
        }
    }

    private func take(generation mine: UInt64) -> Range<Int>? {
        var current = cursor.load(ordering: .acquiring)
        while true {
            let next = Int(current & 0xffff_ffff), count = total.load(ordering: .relaxed)
            guard current >> 32 == mine, next < count else { return nil }
            let end = min(next + Self.chunk, count)
            let (exchanged, original) = cursor.compareExchange(expected: current, desired: mine << 32 | UInt64(end),
                                                               ordering: .acquiringAndReleasing)
            if exchanged { return next..<end }
            current = original
        }
    }

    private func helperLoop() {
        var seen: UInt64 = 0
        while true {
            pthread_mutex_lock(mutex)
            while postedGeneration == seen && !stopping.load(ordering: .relaxed) { pthread_cond_wait(posted, mutex) }
            seen = postedGeneration
            pthread_mutex_unlock(mutex)
            if stopping.load(ordering: .relaxed) { return }
            takeJobs(generation: seen, helping: true)
        }
    }
}

/// How many jobs a helper thread took from its loop.
final class HelperCounter: Sendable {
    let jobs = Atomic<Int>(0)
}
