import Addresses
import CLinux
import Descriptors
import Glibc
import Plan
import WireGuard

/// Asks a userspace WireGuard (wireguard-go, boringtun, vpn-server) for its transport over
/// its `wg` socket, DIRECTORY/IFACE.sock: `get=1`, then `listen_port`, `fwmark` and the
/// peers' endpoints from the answer, and the answering daemon's uid (SO_PEERCRED). The
/// answer carries the private key: it is parsed in place and wiped. Short timeouts: vpnd
/// asks from its event loop, and a daemon busy in a loop may answer late.
public struct WireGuardSocketReader: Sendable {
    public let directory: String

    public init(directory: String = "/var/run/wireguard") {
        self.directory = directory
    }

    /// nil when the interface has no socket there (not a userspace WireGuard, one that serves
    /// no `wg` socket, or one whose socket nobody listens on any more: its daemon is gone);
    /// else what the daemon answered, or why it did not (source `wireguardSocket` without a
    /// port: see `TransportReader.keepingKnown`).
    public func transport(of interface: String) -> TunnelTransport? {
        let path = directory + "/" + interface + ".sock"
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
        if let untrusted = untrustedDirectory() {
            return TunnelTransport(source: .unknown, detail: "\(path) not read: \(untrusted)")
        }
        do {
            return try ask(path)
        } catch WireGuardSocketError.nobodyListens {
            return nil
        } catch {
            return TunnelTransport(source: .wireguardSocket, detail: "\(path) did not answer: \(error)")
        }
    }

    /// Whoever can make a socket in the directory could name any port as a tunnel's: it
    /// must be root's and writable by root alone.
    private func untrustedDirectory() -> String? {
        var info = stat()
        guard stat(directory, &info) == 0 else { return "cannot stat \(directory)" }
        if info.st_uid != 0 { return "\(directory) is not root's" }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 { return "\(directory) is writable by others than root" }
        return nil
    }

    private func ask(_ path: String) throws -> TunnelTransport {
        let connection = try FileDescriptor.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue))
        var timeout = timeval(tv_sec: 0, tv_usec: 300_000)
        setsockopt(connection.raw, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection.raw, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let address: UnixSocketAddress
        do { address = try UnixSocketAddress(path: path) } catch { throw WireGuardSocketError.address(error) }
        let connected = address.withSockaddr { connect(connection.raw, $0, $1) }
        guard connected == 0 else {
            let error = SystemError("connect")
            throw error.code == ECONNREFUSED || error.code == ENOENT ? WireGuardSocketError.nobodyListens(error) : .system(error)
        }
        var peer = vx_ucred()
        guard vx_peer_credentials(connection.raw, &peer) == 0 else {
            throw WireGuardSocketError.system(SystemError("SO_PEERCRED"))
        }
        let request = Array("get=1\n\n".utf8)
        guard send(connection.raw, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            throw WireGuardSocketError.system(SystemError("send"))
        }
        var answer = [UInt8](repeating: 0, count: 1 << 16)
        defer { UAPI.wipe(&answer) }
        var used = 0
        // The answer ends with an empty line (after errno=N).
        while !(used >= 2 && answer[used - 1] == 10 && answer[used - 2] == 10) {
            guard used < answer.count else { throw WireGuardSocketError.answerTooLong(bytes: answer.count) }
            let count = answer[used...].withUnsafeMutableBytes { read(connection.raw, $0.baseAddress, $0.count) }
            guard count > 0 else { throw count == 0 ? WireGuardSocketError.closedBeforeAnswering : .system(SystemError("read")) }
            used += count
        }
        let parsed = try answer.withUnsafeBytes { buffer throws(UAPI.ProtocolError) in
            try UAPI.Transport.parse(UnsafeRawBufferPointer(rebasing: buffer[..<used]))
        }
        var transport = TunnelTransport(source: .wireguardSocket, udpPort: parsed.listenPort, owner: peer.uid, fwmark: parsed.fwmark,
                                        endpoints: parsed.endpoints)
        transport.heldBy = peer.pid
        return transport
    }
}
