import CLinux
import CSystemd
import Descriptors
import ServiceSupport
import Glibc
import WireGuardDevice

/// What both ways of running share once the tunnel exists: keep only the capabilities the
/// engine still needs, run its threads, tell systemd it is ready, and wait until a signal
/// or the deletion of the interface ends it.
enum Lifetime {
    enum Ending {
        case signal(Int32)
        /// `ip link delete`, `wg-quick down`: as wireguard-go, the engine goes with it.
        case interfaceDeleted
    }

    /// After setup, only what a running engine needs (Privileges.tunnelEngine), no_new_privs.
    static func dropPrivileges(log: Log) throws {
        try Privileges.dropToMinimum(effective: Privileges.tunnelEngine, permitted: Privileges.tunnelEngine)
        log.info("capabilities: \(Privileges.current()); no_new_privs set")
    }

    /// The tunnel's events as log lines, prefixed with its interface.
    static func events(_ log: Log, interface: String) -> @Sendable (TunnelEvent) -> Void {
        { event in
            switch event {
            case .requestRefused: log.warning("\(interface): \(event)")
            case .interfaceDeleted: log.notice("\(interface): \(event)")
            case .listenPortChanged, .mtuChanged: log.info("\(interface): \(event)")
            // A listening peer is always up: its "up" would only say that some client's
            // handshake completed, in words written for vpnd's tunnels.
            case .demandChanged: break
            }
        }
    }

    /// Starts the tunnel and serves it until SIGTERM or SIGINT (SIGHUP changes nothing) or
    /// until its interface is deleted; the threads have stopped when it returns.
    static func serve(_ tunnel: RunningTunnel, started message: String, log: Log) throws -> Ending {
        // Blocked before the threads start, so they inherit the mask and only the
        // signalfd sees these.
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        signal(SIGPIPE, SIG_IGN)
        let signals = try FileDescriptor("signalfd", returned: signalfd(-1, &set, Int32(SFD_CLOEXEC)))
        tunnel.start()
        log.notice(message)
        sd_notify(0, "READY=1")
        let ending = wait(signals: signals, ended: tunnel.endedFD)
        if case .signal = ending { log.notice("\(tunnel.tun.name): stopping") }
        tunnel.stop()
        return ending
    }

    private static func wait(signals: borrowing FileDescriptor, ended: Int32) -> Ending {
        var fds = [pollfd(fd: signals.raw, events: Int16(POLLIN), revents: 0), pollfd(fd: ended, events: Int16(POLLIN), revents: 0)]
        while true {
            guard poll(&fds, 2, -1) > 0 else { continue }
            if fds[1].revents != 0 { return .interfaceDeleted }
            var info = signalfd_siginfo()
            if fds[0].revents != 0, read(signals.raw, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size,
               Int32(info.ssi_signo) != SIGHUP {
                return .signal(Int32(info.ssi_signo))
            }
        }
    }
}
