import Addresses
import Monotonic
import WireGuard

// Network -> TUN: receive a batch of datagrams, cut coalesced runs into datagrams, send
// handshake messages to their thread, decrypt the transport messages and write what they
// carry to the TUN (coalesced into super-packets with offloads).
extension RunningTunnel {
    /// What the receiving loop carries from one batch to the next.
    struct Inbound {
        var batch: DatagramBatch
        var batchMTU: Int
        /// With offloads, a batch's TCP segments reach the kernel coalesced (GRO).
        let coalescer: TunCoalescer?
        let opens: OpenJobs
        let helper: CryptoHelper?
        let handshakes: HandshakeWorker
        var clock: MonotonicInstant
        var wall: WallClock
        /// Whether this batch gave the TUN a packet (demand counts it as traffic).
        var delivered = false
    }

    func inboundLoop() {
        let batchMTU = mtu.load(ordering: .relaxed)
        let opens = OpenJobs(capacity: 256)
        var inbound = Inbound(
            batch: DatagramBatch(capacity: 64, slotSize: receiveSlotSize(mtu: batchMTU), headroom: 0), batchMTU: batchMTU,
            coalescer: tun.hasVirtioHeader ? TunCoalescer(capacity: 512) : nil, opens: opens,
            helper: options.parallelCrypto ? CryptoHelper(name: "wg-open-\(tun.name)", counter: opensHelped) { opens.perform($0) } : nil,
            handshakes: HandshakeWorker(name: "wg-hs-\(tun.name)", engine: engine) { [self] in send($0) },
            clock: now(), wall: wall())
        defer {
            inbound.helper?.stop()
            inbound.handshakes.stop()
        }
        while !isStopping {
            followMTU(&inbound)
            // Nothing, or empty datagrams: the socket was moved to another port (or is
            // stopping) while this waited on it; the next receive waits on the new one.
            guard let count = inbound.batch.receive(from: udp) else { continue }
            // Down, nothing reaches the engine: a server's initiation would bring a session up.
            guard demand.acceptsInbound else { continue }
            inbound.clock = now()
            inbound.wall = wall()
            inbound.delivered = false
            for i in 0..<count { takeReceived(i, &inbound) }
            finishOpens(&inbound)
            flushToTun(&inbound)
            if inbound.delivered { demand.noteReceived(inbound.clock) }
            send(engine.drainOutput())
        }
    }

    /// A slot of a coalescing socket holds a run of up to 64 KiB.
    private func receiveSlotSize(mtu: Int) -> Int { udp.receivesCoalesced ? Self.coalescedSlotSize : Self.slotSize(mtu: mtu) }

    private func followMTU(_ inbound: inout Inbound) {
        let current = mtu.load(ordering: .relaxed)
        guard current != inbound.batchMTU else { return }
        inbound.batchMTU = current
        inbound.batch = DatagramBatch(capacity: 64, slotSize: receiveSlotSize(mtu: current), headroom: 0)
    }

    /// Received slot `i`: one datagram, or a coalesced run of them, each but the last of the
    /// kernel's segment size.
    private func takeReceived(_ i: Int, _ inbound: inout Inbound) {
        let length = inbound.batch.receivedLength(i)
        guard length > 0, let sender = inbound.batch.sender(i) else { return }
        let buffer = inbound.batch.slot(i)
        let step = inbound.batch.segmentSize(i)
        for start in stride(from: 0, to: length, by: step) {
            take(datagram: start..<min(start + step, length), in: buffer, from: sender, &inbound)
        }
    }

    /// A handshake message goes to its thread; a transport message waits to be decrypted
    /// with the batch's others; the engine answers anything else at once.
    private func take(datagram: Range<Int>, in buffer: UnsafeMutableRawBufferPointer, from sender: Endpoint,
                      _ inbound: inout Inbound) {
        let type = buffer[datagram.lowerBound]
        if type != MessageType.transport.rawValue, type <= MessageType.cookieReply.rawValue, type > 0,
           datagram.count <= MessageSize.initiation {
            return handOver(handshake: UnsafeRawBufferPointer(rebasing: buffer[datagram]), type: type, from: sender, &inbound)
        }
        switch engine.beginDecapsulating(buffer: buffer, datagram: datagram, from: sender,
                                         underLoad: false, now: inbound.clock, wall: inbound.wall) {
        case let .open(pending):
            if inbound.opens.isFull { finishOpens(&inbound) }
            inbound.opens.add(pending, in: buffer)
        case let .done(result):
            deliver(result, in: buffer, &inbound)
        }
    }

    /// Handshakes go to their own thread; a full queue is a flood.
    private func handOver(handshake: UnsafeRawBufferPointer, type: UInt8, from sender: Endpoint, _ inbound: inout Inbound) {
        let now = inbound.clock.nanoseconds
        let underLoad = (type == MessageType.initiation.rawValue ? load.countInitiation(now: now) : load.isUnderLoad(now: now))
            || inbound.handshakes.isBacklogged
        if !inbound.handshakes.enqueue(handshake, from: sender, underLoad: underLoad) {
            engine.countDrop(.rateLimited)
        }
    }

    /// Decrypts the waiting transport messages (on both cores when it is worth it), then
    /// lets the engine accept them one by one in the order they arrived.
    private func finishOpens(_ inbound: inout Inbound) {
        let opens = inbound.opens
        guard opens.count > 0 else { return }
        if let helper = inbound.helper { helper.run(opens.count, bytes: opens.bytes) } else { opens.perform(0..<opens.count) }
        for j in 0..<opens.count {
            let (pending, buffer) = opens.job(j)
            deliver(engine.finishDecapsulating(pending, buffer: buffer, now: inbound.clock, wall: inbound.wall), in: buffer, &inbound)
        }
        opens.clear()
    }

    private func deliver(_ result: Engine.Inbound, in buffer: UnsafeMutableRawBufferPointer, _ inbound: inout Inbound) {
        switch result {
        case let .deliver(range):
            inbound.delivered = true
            writeToTun(UnsafeMutableRawBufferPointer(rebasing: buffer[range]), &inbound)
        case .keepalive, .drop:
            break
        case let .control(datagrams):
            send(datagrams)
        }
    }

    /// A decrypted packet to the coalescer, or straight to the TUN without offloads. The
    /// transport header in front of the plaintext, consumed, makes room for the virtio-net
    /// header.
    private func writeToTun(_ packet: UnsafeMutableRawBufferPointer, _ inbound: inout Inbound) {
        guard let coalescer = inbound.coalescer else {
            if !tun.write(UnsafeRawBufferPointer(packet)) { engine.countDrop(.tunRefused) }
            return
        }
        if coalescer.isFull { flushToTun(&inbound) }
        coalescer.add(packet)
    }

    private func flushToTun(_ inbound: inout Inbound) {
        inbound.coalescer?.flush { if !tun.write(vectors: $0) { engine.countDrop(.tunRefused) } }
    }
}
