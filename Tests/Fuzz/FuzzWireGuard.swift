import Addresses
import Glibc
import Monotonic
import WireGuard

/// libFuzzer entry (scripts/fuzz builds it with -sanitize=fuzzer,address): every input is
/// a datagram from the network for an engine with a configured peer, a frame from the TUN
/// (virtio-net header and packet) to segment, three decrypted packets to coalesce (what a
/// peer decides), and, as text, a userspace API request and a wg-quick file. Nothing may
/// crash, hang or leak; every datagram must come out as a drop, a keepalive, a delivery or
/// control messages.
private let engine: Engine = {
    // The responder of the handshake known-answer vectors, so the seed initiation from
    // scripts/fuzz is a valid one and mutations reach deep into the handshake.
    let local = PrivateKey(hex: String(repeating: "22", count: 32))!
    let remote = PrivateKey(hex: String(repeating: "11", count: 32))!.publicKey
    return Engine(configuration: InterfaceConfiguration(privateKey: local, listenPort: 51820, peers: [
        PeerConfiguration(publicKey: remote, endpoint: Endpoint(address: .v4(0xC000_0201), port: 51820),
                          allowedIPs: [IPPrefix("10.0.0.0/8")!]),
    ]))
}()
private let source = Endpoint(address: .v4(0xC633_6402), port: 40000)
private let coalescer = TunCoalescer(capacity: 4)
private let slot = UnsafeMutableRawBufferPointer.allocate(byteCount: 1536, alignment: 16)
private var clock: UInt64 = 1_000_000_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    clock += 1_000_000
    let input = UnsafeBufferPointer(start: data, count: size)
    var buffer = [UInt8](input) + [UInt8](repeating: 0, count: 64)
    let now = MonotonicInstant(nanoseconds: clock)
    let wall = WallClock(seconds: 1_700_000_000 + Int64(clock / 1_000_000_000), nanoseconds: 0)
    _ = WireFormat.classify(UnsafeRawBufferPointer(input))
    _ = buffer.withUnsafeMutableBytes {
        engine.decapsulate(buffer: $0, datagram: 0..<size, from: source, underLoad: size % 2 == 0, now: now, wall: wall)
    }
    // The same bytes as a packet from the TUN, with room for the header in front.
    var outbound = [UInt8](repeating: 0, count: 16) + [UInt8](input) + [UInt8](repeating: 0, count: 64)
    _ = outbound.withUnsafeMutableBytes {
        engine.encapsulate(buffer: $0, packet: 16..<(16 + size), now: now, wall: wall)
    }
    _ = TunOffload.split(UnsafeRawBufferPointer(input), next: { slot }, emit: { precondition($0 <= slot.count) })
    // The input cut into three packets, each with room for the virtio-net header in front.
    let third = size / 3
    var packets = [UInt8](repeating: 0, count: 3 * (TunOffload.headerSize + third))
    packets.withUnsafeMutableBytes { memory in
        for i in 0..<3 {
            let at = i * (TunOffload.headerSize + third) + TunOffload.headerSize
            let packet = UnsafeMutableRawBufferPointer(rebasing: memory[at..<(at + third)])
            packet.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(input)[(i * third)..<((i + 1) * third)]))
            coalescer.add(packet)
        }
        var written = 0
        coalescer.flush { vectors in written += vectors.reduce(0) { $0 + $1.iov_len } }
        precondition(written <= memory.count, "a write larger than its packets")
    }
    _ = engine.tick(now: now, wall: wall)
    _ = engine.drainOutput()
    let text = String(decoding: input, as: UTF8.self)
    _ = try? UAPI.parse(lines: text.split(separator: "\n", omittingEmptySubsequences: false))
    _ = try? WgQuickConfig.parse(text, file: "fuzz.conf")
    return 0
}
