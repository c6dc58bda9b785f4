import Cgroups
import Control
import Plan
import Policy

/// The requests that move a process (vpnexec, `vpnctl move`, `vpnctl move --out`): who may
/// move which process from where, the process held by a pidfd throughout, the kernel's maps
/// knowing the destination's id before the process runs on in it.
extension RequestHandler {
    /// Into the profile as systemd's own: a transient scope `vpnexec-PROFILE-PID.scope` in
    /// `vpn-PROFILE.slice` holding the process, so systemctl, accounting and limits see it
    /// where it is. If systemd refuses (or is gone), the cgroupfs move. `done` makes the
    /// answer once the process is verified in the profile's cgroup, named by where it went.
    func place(_ process: ProcessHandle, in profile: Profile, by peer: Peer, scopes: any ScopeStarting,
               reply: @escaping (ControlResponse) -> Void, done: @escaping (String) -> ControlResponse) {
        let path = profile.cgroupPath(parent: cgroupParent)
        do {
            try authorizeMove(process, into: path, by: peer)
            try prepareMove(into: path)
        } catch let failure as RequestFailure {
            return reply(.failure(failure.description))
        } catch {
            return reply(.failure("\(error)"))
        }
        let pid = process.pid
        let unit = "vpnexec-\(profile.name)-\(pid).scope"
        scopes.start(unit: unit, slice: "vpn-\(profile.name).slice", pid: pid,
                     description: "vpnexec -p \(profile.name): \(process.commandName())") { [self] error in
            do {
                if let error {
                    log.warning("pid \(pid): \(error); moving it into \(path) directly")
                    try cgroups.move(process, to: path)
                }
                try prepareMove(into: path)
                guard process.isAlive, let now = cgroups.currentCgroup(of: pid), now == path || now.hasPrefix(path + "/") else {
                    return reply(.failure("pid \(pid) did not arrive in profile \(profile.name)'s cgroup"))
                }
                answers.joined(profile)
                reply(done(error == nil ? "scope \(unit)" : "cgroup \(path)"))
            } catch {
                reply(.failure("\(error)"))
            }
        }
    }

    /// The profile and the process a `vpnctl move` names, if the caller may use the profile
    /// and the process is its own (root: any).
    func moveTarget(profile name: String, pid: Int32, by peer: Peer) throws -> (Profile, ProcessHandle) {
        (try profileForUse(name, by: peer), try ownProcess(pid, of: peer))
    }

    static func movedMessage(_ pid: Int32, _ profile: Profile) -> String {
        "pid \(pid) moved into profile \(profile.name); its existing connections keep their route, new ones use the tunnel"
    }

    /// A process held by a pidfd opened before any check and verified alive after them (the
    /// checks were about this process, not one that took its pid), if the caller may move
    /// it at all: its own, or any for root.
    func ownProcess(_ pid: Int32, of peer: Peer) throws -> ProcessHandle {
        let process = try ProcessHandle.open(pid: pid)
        let owner = process.realUID()
        guard process.isAlive, let owner else { throw RequestFailure("no process \(pid)") }
        guard peer.uid == 0 || owner == peer.uid else {
            throw RequestFailure("process \(pid) belongs to uid \(owner); \(peer.userName) may only move its own processes")
        }
        return process
    }

    /// `vpnctl move --out`: the inverse of move, under the same rules (for a user, the rule
    /// that only root takes a process out of a profile decides).
    func moveOut(_ pid: Int32, by peer: Peer) throws -> ControlResponse {
        let process = try ownProcess(pid, of: peer)
        guard let source = cgroups.currentCgroup(of: pid), process.isAlive else { throw RequestFailure("no process \(pid)") }
        guard let profile = policy.profiles.first(where: {
            let path = $0.cgroupPath(parent: cgroupParent)
            return source == path || source.hasPrefix(path + "/")
        }) else {
            throw RequestFailure("pid \(pid) is in no profile's cgroup (it is in \(source.isEmpty ? "the root cgroup" : source))")
        }
        guard let destination = SessionPlacement.destination(
            uid: process.realUID() ?? 0, sessionID: sessionID(pid), systemdManagesCgroups: systemdManagesCgroups,
            exists: { cgroups.id(of: $0) != nil }) else {
            throw RequestFailure("pid \(pid) belongs to no live login session, so there is no place its session would have it; stop it and start it again outside the profile")
        }
        try move(process, into: destination, by: peer)
        let place = destination.isEmpty ? "the root cgroup" : destination
        log.info("\(peer.userName) moved pid \(pid) (\(process.commandName())) out of profile \(profile.name) into \(place)")
        return ControlResponse(ok: true, message: "pid \(pid) moved out of profile \(profile.name) into \(place); its existing connections keep their route, new ones do not use the tunnel")
    }

    /// Before a move into `path`: every cgroup vpnd keeps exists and its id is in the
    /// applied maps, and `path` has its socket programs.
    func prepareMove(into path: String) throws {
        try reconciler.prepareMove(cgroups: cgroups, parent: cgroupParent)
        try reconciler.checkGuarded(path)
    }

    /// Whether the caller may take the process out of where it is now into `path`.
    func authorizeMove(_ process: ProcessHandle, into path: String, by peer: Peer) throws {
        guard let source = cgroups.currentCgroup(of: process.pid), process.isAlive else {
            throw RequestFailure("process \(process.pid) exited")
        }
        try refuse(Authorization.check(peer, mayMove: process.pid, from: source, into: path,
                                       profileParent: cgroupParent, policy: policy))
    }

    /// The calling process itself, held by a pidfd (vpnexec, just before it execs).
    func callingProcess(_ peer: Peer) throws -> ProcessHandle {
        guard let process = peer.process else {
            log.notice("refused \(peer.userName): \(peer.unidentified ?? "unidentified")")
            throw RequestFailure("refused: \(peer.unidentified ?? "cannot identify the calling process")")
        }
        return process
    }

    /// Into a cgroup vpnd keeps (a profile's, the bypass slice), if the caller may take the
    /// process out of where it is. The kernel's maps must know the cgroup's id before the
    /// process runs on in it: a cgroup systemd or an admin removed (and maybe made again,
    /// with a new id) is brought back and its id applied first, and checked again after
    /// the move.
    func move(_ process: ProcessHandle, into path: String, by peer: Peer) throws {
        try authorizeMove(process, into: path, by: peer)
        try prepareMove(into: path)
        try cgroups.move(process, to: path)
        try prepareMove(into: path)
    }
}
