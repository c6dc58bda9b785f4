import Descriptors
import Glibc
import Monotonic
import WireGuard

// TUN -> network: wait for the TUN, read a batch of packets into the engine (or, down on
// demand, until one is for a peer), encrypt the batch and send it.
extension RunningTunnel {
    /// What the sending loop carries from one read to the next.
    struct Outbound {
        /// The datagrams being filled, one packet a slot, each with room for its transport
        /// header in front and its padding and tag behind.
        var batch: DatagramBatch
        var batchMTU: Int
        /// The next free slot of `batch`.
        var slot = 0
        let seals: SealJobs
        let helper: CryptoHelper?
        /// Where a read lands with offloads (a virtio-net header, then up to a 64 KiB TCP
        /// super-packet to be cut into the batch's slots); empty without, where a read lands in
        /// its slot.
        let frame: UnsafeMutableRawBufferPointer
        var clock: MonotonicInstant
        var wall: WallClock

        init(mtu: Int, seals: SealJobs, helper: CryptoHelper?, offloads: Bool, now: MonotonicInstant, wall: WallClock) {
            batchMTU = mtu
            batch = DatagramBatch(capacity: seals.capacity, slotSize: RunningTunnel.slotSize(mtu: mtu), headroom: 16)
            self.seals = seals
            self.helper = helper
            frame = .allocate(byteCount: offloads ? TunOffload.headerSize + 65_536 : 0, alignment: 64)
            clock = now
            self.wall = wall
        }

        func release() {
            helper?.stop()
            frame.deallocate()
        }

        mutating func follow(mtu: Int) {
            guard mtu != batchMTU else { return }
            batchMTU = mtu
            batch = DatagramBatch(capacity: seals.capacity, slotSize: RunningTunnel.slotSize(mtu: mtu), headroom: 16)
        }

        /// The next packet's room in its slot; a full batch is sent first.
        mutating func room(sendingFullTo udp: UDPSocket) -> UnsafeMutableRawBufferPointer {
            if slot == batch.capacity { sealAndSend(to: udp) }
            let buffer = batch.slot(slot)
            return UnsafeMutableRawBufferPointer(rebasing: buffer[16..<(buffer.count - 32)])
        }

        /// Encrypts what the batch holds (on both cores when it is worth it), then sends it:
        /// the datagrams leave in the order the engine numbered them.
        mutating func sealAndSend(to udp: UDPSocket) {
            if let helper { helper.run(seals.count, bytes: seals.bytes) } else { seals.perform(0..<seals.count) }
            seals.clear()
            batch.flush(to: udp)
            slot = 0
        }
    }

    func outboundLoop() {
        let seals = SealJobs(capacity: 64)
        let helper = options.parallelCrypto ? CryptoHelper(name: "wg-seal-\(tun.name)", counter: sealsHelped) { seals.perform($0) } : nil
        var out = Outbound(mtu: mtu.load(ordering: .relaxed), seals: seals, helper: helper, offloads: tun.hasVirtioHeader,
                           now: now(), wall: wall())
        defer { out.release() }
        var fds = [pollfd(fd: tun.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.raw, events: Int16(POLLIN), revents: 0)]
        while !isStopping, waitForTun(&fds) {
            out.follow(mtu: mtu.load(ordering: .relaxed))
            out.clock = now()
            out.wall = wall()
            out.slot = 0
            // Down on demand, the first packet for a peer brings the tunnel up; held down, none.
            switch demand.admit(now: out.clock, { readBatch(&out) }) {
            case .open: break
            case .down: offerWaiting(&out)
            case .held: discardWaiting(&out); continue
            }
            out.sealAndSend(to: udp)
            // Rekeys that this traffic triggered go out now, not at the next tick.
            send(engine.drainOutput())
        }
    }

    /// Waits for packets in the TUN; false once the tunnel stops or its interface is gone.
    private func waitForTun(_ fds: inout [pollfd]) -> Bool {
        guard retryingInterrupted({ poll(&fds, 2, -1) }) >= 0 else { return false }
        if fds[1].revents != 0 || isStopping { return false }
        // A deleted interface makes the TUN poll as an error and read as EBADFD, for good.
        if fds[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
            interfaceGone()
            return false
        }
        return true
    }

    /// Reads what waits in the TUN, a batch's worth, into the engine.
    private func readBatch(_ out: inout Outbound) {
        while out.slot < out.batch.capacity, let read = readTun(&out) {
            encapsulate(read: read, &out)
        }
    }

    /// Down on demand: packets one by one until one is for a peer; it brings the tunnel up
    /// and goes to the engine (the rest wait for the next round). The others are dropped.
    private func offerWaiting(_ out: inout Outbound) {
        while let read = readTun(&out) {
            guard let packet = packet(in: read), demand.offer(packet, now: out.clock) else { continue }
            encapsulate(read: read, &out)
            return
        }
    }

    /// Held down: what waits in the TUN is read and dropped.
    private func discardWaiting(_ out: inout Outbound) {
        while readTun(&out) != nil {}
    }

    /// One read from the TUN, into the frame with offloads, else into the next slot; nil
    /// once nothing waits.
    private func readTun(_ out: inout Outbound) -> UnsafeRawBufferPointer? {
        let into = tun.hasVirtioHeader ? out.frame : out.room(sendingFullTo: udp)
        let n = read(tun.fd, into.baseAddress, into.count)
        if n < 0 && errno == EBADFD { interfaceGone() }
        return n > 0 ? UnsafeRawBufferPointer(rebasing: into[0..<n]) : nil
    }

    /// The IP packet of a read: past the virtio-net header with offloads; nil if there is none.
    private func packet(in read: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard tun.hasVirtioHeader else { return read }
        guard read.count > TunOffload.headerSize else { return nil }
        return UnsafeRawBufferPointer(rebasing: read[TunOffload.headerSize...])
    }

    /// Hands a read to the engine: a super-packet cut into slots of the batch, or the
    /// packet already in its slot.
    private func encapsulate(read: UnsafeRawBufferPointer, _ out: inout Outbound) {
        guard tun.hasVirtioHeader else { return encapsulate(length: read.count, &out) }
        // Closures, not methods passed as values: those cost a heap allocation per read.
        let cut = TunOffload.split(read, next: { out.room(sendingFullTo: udp) }, emit: { encapsulate(length: $0, &out) })
        if !cut { engine.countDrop(.malformed) }
    }

    /// The engine encrypts (or defers to the batch's seal) the packet in the current slot.
    private func encapsulate(length: Int, _ out: inout Outbound) {
        var seal: PendingSeal?
        switch engine.encapsulate(buffer: out.batch.slot(out.slot), packet: 16..<(16 + length), now: out.clock,
                                  wall: out.wall, deferring: &seal) {
        case let .send(range, to: endpoint):
            if let seal { out.seals.add(seal) }
            out.batch.enqueue(slot: out.slot, range: range, to: endpoint, dualStack: udp.isDualStack)
            out.slot += 1
        case let .queued(handshake):
            send(handshake)
        case .drop:
            break
        }
    }
}
