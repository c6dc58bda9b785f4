import Addresses
import CLinux
import Descriptors
import Glibc
import Synchronization
import WireGuard

/// The `wg` tool's socket, /var/run/wireguard/IFACE.sock: one request per connection is
/// what `wg` sends, served on the timer thread with a short receive timeout so a client
/// that stalls cannot hold the timers.
final class UAPIServer: @unchecked Sendable {
    /// The listening socket until `close()`; the timer thread polls and accepts on it while
    /// another thread may close it, hence the lock.
    private let listener: Mutex<FileDescriptor?>
    /// For poll(); -1 once closed.
    var fd: Int32 { listener.withLock { $0?.raw ?? -1 } }
    let path: String

    init(directory: String, interface: String) throws {
        mkdir(directory, 0o755)
        path = "\(directory)/\(interface).sock"
        let socket = try Self.listen(at: path)
        listener = Mutex(socket)
    }

    private static func listen(at path: String) throws(SystemError) -> FileDescriptor {
        let address: UnixSocketAddress
        do { address = try UnixSocketAddress(path: path) } catch { throw SystemError("\(error)", code: ENAMETOOLONG) }
        let socket = try FileDescriptor.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue))
        unlink(path)
        // Owner only: the socket hands out the private key.
        let previous = umask(0o077)
        let rc = address.withSockaddr { bind(socket.raw, $0, $1) }
        umask(previous)
        guard rc == 0, Glibc.listen(socket.raw, 16) == 0 else { throw SystemError("listen on \(path)") }
        return socket
    }

    /// Removes the socket; the second and later calls do nothing.
    func close() {
        listener.withLock { listener in
            guard let socket = listener.take() else { return }
            unlink(path)
            socket.close()
        }
    }

    func serveOne(tunnel: RunningTunnel) {
        let accepted = listener.withLock { listener -> Int32 in
            guard let listening = listener?.raw else { return -1 }
            return vx_accept4(listening, Int32(SOCK_CLOEXEC.rawValue))
        }
        guard accepted >= 0 else { return }
        let client = FileDescriptor(adopting: accepted)
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(client.raw, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            // A request ends with an empty line.
            while let end = Self.requestEnd(pending) {
                let text = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeFirst(end + 2)
                let answer = respond(to: text, tunnel: tunnel)
                _ = answer.utf8CString.withUnsafeBufferPointer { write(client.raw, $0.baseAddress, $0.count - 1) }
            }
            let n = read(client.raw, &chunk, chunk.count)
            if n <= 0 || pending.count > 1 << 20 { return }
            pending += chunk[0..<n]
        }
    }

    static func requestEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        if bytes[0] == 10 { return nil }
        for i in 1..<bytes.count where bytes[i] == 10 && bytes[i - 1] == 10 { return i - 1 }
        return nil
    }

    private func respond(to text: String, tunnel: RunningTunnel) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        do {
            switch try UAPI.parse(lines: lines) {
            case .get:
                return Self.renderGet(tunnel.engine.status, listenPort: tunnel.udp.port)
            case let .set(request):
                try apply(request, to: tunnel)
                return UAPI.renderSetOK
            case .stats:
                let helped = tunnel.helperJobs
                return UAPI.renderStats(tunnel.engine.status.drops,
                                        device: [("helper_sealed", helped.sealed), ("helper_opened", helped.opened)])
            }
        } catch {
            // wireguard-go logs every refusal; `wg` only gets the code.
            tunnel.options.events(.requestRefused(reason: error.message, code: error.code))
            return UAPI.renderError(error)
        }
    }

    static func renderGet(_ status: EngineStatus, listenPort: UInt16) -> String {
        UAPI.renderGet(privateKey: status.privateKey, listenPort: listenPort, fwmark: status.fwmark, peers: status.peers.map { peer in
            UAPI.PeerReport(publicKey: peer.publicKey, presharedKey: peer.presharedKey,
                            endpoint: peer.endpoint.map { ($0.address, $0.port) },
                            lastHandshake: peer.lastHandshake.map { (Int64($0.seconds), Int64($0.nanoseconds)) },
                            txBytes: peer.txBytes, rxBytes: peer.rxBytes,
                            persistentKeepalive: peer.persistentKeepalive ?? 0, allowedIPs: peer.allowedIPs)
        })
    }

    /// Applies a request whole or not at all: what can fail (taking the port, marking the
    /// socket) goes first, the engine's changes, which cannot fail, after it.
    private func apply(_ request: UAPI.SetRequest, to tunnel: RunningTunnel) throws(UAPI.ProtocolError) {
        let engine = tunnel.engine
        let udp = tunnel.udp
        let oldPort = udp.port
        // As the kernel: another port (0 is any free one) moves the socket, the same one does nothing.
        if let port = request.listenPort, port != oldPort {
            do {
                try udp.rebind(port: port, mark: request.fwmark)
            } catch {
                throw UAPI.ProtocolError(message: "cannot move to UDP port \(port): \(error)", code: Self.code(error, default: .portInUse))
            }
            engine.setListenPort(udp.port)
            tunnel.options.events(.listenPortChanged(from: oldPort, to: udp.port))
        } else if let mark = request.fwmark {
            do {
                try udp.setMark(mark)
            } catch {
                throw UAPI.ProtocolError(message: "cannot mark the tunnel socket: \(error)", code: Self.code(error, default: .invalid))
            }
        }
        if let mark = request.fwmark { engine.setFwmark(mark == 0 ? nil : mark) }
        if let privateKey = request.privateKey { engine.setPrivateKey(privateKey) }
        if request.replacePeers { engine.removeAllPeers() }
        for change in request.peers {
            let existing = engine.status.peers.first { $0.publicKey == change.publicKey }
            if change.remove { engine.removePeer(change.publicKey); continue }
            if change.updateOnly && existing == nil { continue }
            var peer = PeerConfiguration(publicKey: change.publicKey, presharedKey: existing?.presharedKey,
                                         endpoint: existing?.endpoint, allowedIPs: [],
                                         persistentKeepalive: existing?.persistentKeepalive)
            if let psk = change.presharedKey { peer.presharedKey = psk }
            if let endpoint = change.endpoint { peer.endpoint = Endpoint(address: endpoint.address, port: endpoint.port) }
            if let seconds = change.persistentKeepalive { peer.persistentKeepalive = seconds == 0 ? nil : seconds }
            engine.upsertPeer(peer, replaceAllowedIPs: change.replaceAllowedIPs || existing == nil, then: change.allowedIPChanges)
            // Switched on: a keepalive now, as wireguard-go and the kernel send (the timer
            // thread sends it with its next tick).
            if (existing?.persistentKeepalive ?? 0) == 0, (peer.persistentKeepalive ?? 0) > 0 {
                engine.keepalive(change.publicKey, now: tunnel.now(), wall: tunnel.wall())
            }
        }
    }

    /// The errno of a failed system call, for `wg` to print.
    private static func code(_ error: Error, default fallback: UAPI.ErrorCode) -> UAPI.ErrorCode {
        (error as? SystemError).map { UAPI.ErrorCode($0.code) } ?? fallback
    }
}
