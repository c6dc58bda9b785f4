import WireGuard

/// The encryptions of one outbound batch, kept until they run (on the loop thread and its
/// `CryptoHelper`) just before the batch is sent. Preallocated: no allocation per packet.
final class SealJobs: @unchecked Sendable {
    let capacity: Int
    private let jobs: UnsafeMutablePointer<PendingSeal>
    private(set) var count = 0
    /// Payload bytes of all jobs: whether the helper is worth waking.
    private(set) var bytes = 0

    init(capacity: Int) {
        self.capacity = capacity
        jobs = .allocate(capacity: capacity)
    }

    deinit {
        clear()
        jobs.deallocate()
    }

    @inline(__always)
    func add(_ seal: PendingSeal) {
        (jobs + count).initialize(to: seal)
        count += 1
        bytes += seal.length
    }

    /// Runs jobs `range`; called from two threads at once on disjoint ranges.
    func perform(_ range: Range<Int>) {
        for j in range { jobs[j].seal() }
    }

    func clear() {
        jobs.deinitialize(count: count)
        count = 0
        bytes = 0
    }
}

/// The decryptions of received transport messages, kept in arrival order with the buffer
/// each lives in, so the engine can accept them in that order once they are decrypted.
final class OpenJobs: @unchecked Sendable {
    let capacity: Int
    private let jobs: UnsafeMutablePointer<PendingOpen>
    private let buffers: UnsafeMutablePointer<UnsafeMutableRawBufferPointer>
    private(set) var count = 0
    /// Payload bytes of all jobs: whether the helper is worth waking.
    private(set) var bytes = 0

    init(capacity: Int) {
        self.capacity = capacity
        jobs = .allocate(capacity: capacity)
        buffers = .allocate(capacity: capacity)
    }

    deinit {
        clear()
        jobs.deallocate()
        buffers.deallocate()
    }

    var isFull: Bool { count == capacity }

    @inline(__always)
    func add(_ job: PendingOpen, in buffer: UnsafeMutableRawBufferPointer) {
        (jobs + count).initialize(to: job)
        (buffers + count).initialize(to: buffer)
        count += 1
        bytes += job.length
    }

    /// Runs jobs `range`; called from two threads at once on disjoint ranges.
    func perform(_ range: Range<Int>) {
        for j in range { jobs[j].open(in: buffers[j]) }
    }

    @inline(__always)
    func job(_ j: Int) -> (PendingOpen, UnsafeMutableRawBufferPointer) { (jobs[j], buffers[j]) }

    func clear() {
        jobs.deinitialize(count: count)
        buffers.deinitialize(count: count)
        count = 0
        bytes = 0
    }
}
