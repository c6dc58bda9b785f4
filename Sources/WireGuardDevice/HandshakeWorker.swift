import Addresses
import Glibc
import Monotonic
import WireGuard

/// Handshake messages (initiations, responses, cookie replies) on a thread of their own, as
/// wireguard-go keeps them off its data path: their Diffie-Hellman never holds up the
/// transport packets received in the same batch, and a flood fills a bounded queue, then is
/// dropped and counted, instead of taking the receiving loop's time.
///
/// Moving them off the loop reorders nothing that matters: a peer sends on a new session
/// only after it has our response (or our first packet on it), which this thread sent.
final class HandshakeWorker: @unchecked Sendable {
    /// Messages waiting at most; a fuller queue means a flood (dropped as `rateLimited`).
    static let capacity = 1024
    /// From this many waiting, the engine is under load (cookies first), as wireguard-go
    /// decides from its own queue (an eighth of it).
    static let loadMark = capacity / 8

    private let engine: Engine
    private let send: ([Datagram]) -> Void
    private let storage: UnsafeMutableRawPointer
    private var lengths = [Int](repeating: 0, count: capacity)
    private var sources = [Endpoint?](repeating: nil, count: capacity)
    private var loads = [Bool](repeating: false, count: capacity)
    private var head = 0
    private var count = 0
    private var stopping = false
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let posted = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var thread: LoopThread?

    /// `send` sends what the engine answers (responses, cookie replies, staged packets).
    init(name: String, engine: Engine, send: @escaping ([Datagram]) -> Void) {
        self.engine = engine
        self.send = send
        storage = .allocate(byteCount: Self.capacity * MessageSize.initiation, alignment: 8)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(posted, nil)
        thread = LoopThread(name: name) { [self] in loop() }
    }

    deinit {
        storage.deallocate()
        pthread_cond_destroy(posted)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        posted.deallocate()
    }

    /// Whether so many handshakes wait that the engine should ask for cookies.
    var isBacklogged: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return count >= Self.loadMark
    }

    /// Queues a copy of `message`; false (dropped) when the queue is full or the message
    /// longer than any handshake message.
    @discardableResult
    func enqueue(_ message: UnsafeRawBufferPointer, from source: Endpoint, underLoad: Bool) -> Bool {
        guard message.count <= MessageSize.initiation else { return false }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard count < Self.capacity, !stopping else { return false }
        let at = (head + count) % Self.capacity
        (storage + at * MessageSize.initiation).copyMemory(from: message.baseAddress!, byteCount: message.count)
        lengths[at] = message.count
        sources[at] = source
        loads[at] = underLoad
        count += 1
        pthread_cond_signal(posted)
        return true
    }

    /// Ends the thread (what still waits is dropped) and waits for it.
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(posted)
        pthread_mutex_unlock(mutex)
        thread?.join()
        thread = nil
    }

    private func loop() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: MessageSize.initiation, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            pthread_mutex_lock(mutex)
            while count == 0 && !stopping { pthread_cond_wait(posted, mutex) }
            if stopping { pthread_mutex_unlock(mutex); return }
            let length = lengths[head], source = sources[head]!, underLoad = loads[head]
            buffer.baseAddress!.copyMemory(from: storage + head * MessageSize.initiation, byteCount: length)
            sources[head] = nil
            head = (head + 1) % Self.capacity
            count -= 1
            pthread_mutex_unlock(mutex)
            let clock = MonotonicInstant.now()
            let result = engine.decapsulate(buffer: buffer, datagram: 0..<length, from: source, underLoad: underLoad,
                                            now: clock, wall: .now())
            if case let .control(datagrams) = result { send(datagrams) }
            send(engine.drainOutput())
        }
    }
}
