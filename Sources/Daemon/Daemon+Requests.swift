import Cgroups
import Control
import CSystemd
import Glibc
import Plan
import Policy

/// What vpnd does for vpnexec and vpnctl: each request decided from the kernel's account of
/// the caller (Peer), moves through pidfds.
extension Daemon {

    /// Every request; one that waits (a placement through systemd) answers through `reply`
    /// later.
    func handle(_ request: ControlRequest, from caller: ControlServer.Caller, reply: @escaping (ControlResponse) -> Void) {
        guard let scopes, let peer = Peer.of(socket: caller.fd, passed: caller.passed) else {
            return reply(handle(request, from: caller))
        }
        do {
            switch request {
            case let .exec(name):
                let profile = try profileForLaunch(name, by: peer)
                // The caller waits for this answer, so its pid stays its own meanwhile.
                let process = try callingProcess(peer)
                place(process, in: profile, by: peer, scopes: scopes, reply: reply) { [self] placement in
                    log.info("\(peer.userName) started pid \(peer.pid) (\(process.commandName())) in profile \(profile.name), \(placement)")
                    return ControlResponse(ok: true, message: "pid \(peer.pid) is in profile \(profile.name)")
                }
            case let .move(name, pid):
                let (profile, process) = try moveTarget(profile: name, pid: pid, by: peer)
                place(process, in: profile, by: peer, scopes: scopes, reply: reply) { [self] placement in
                    log.info("\(peer.userName) moved pid \(pid) (\(process.commandName())) into profile \(profile.name), \(placement)")
                    return ControlResponse(ok: true, message: Self.movedMessage(pid, profile))
                }
            default:
                reply(handle(request, from: caller))
            }
        } catch let failure as RequestFailure {
            reply(.failure(failure.description))
        } catch {
            log.error("request failed: \(error)")
            reply(.failure("\(error)"))
        }
    }

    /// Into the profile as systemd's own: a transient scope `vpnexec-PROFILE-PID.scope` in
    /// `vpn-PROFILE.slice` holding the process, so systemctl, accounting and limits see it
    /// where it is. If systemd refuses (or is gone), the cgroupfs move. `done` makes the
    /// answer once the process is verified in the profile's cgroup, named by where it went.
    private func place(_ process: ProcessHandle, in profile: Profile, by peer: Peer, scopes: SystemdScopes,
                       reply: @escaping (ControlResponse) -> Void, done: @escaping (String) -> ControlResponse) {
        let path = profile.cgroupPath(parent: options.cgroupParent)
        do {
            try authorizeMove(process, into: path, by: peer)
            try prepareMove()
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
                    try hierarchy.move(process, to: path)
                }
                try prepareMove()
                guard process.isAlive, let now = CgroupHierarchy.cgroup(ofProcess: pid), now == path || now.hasPrefix(path + "/") else {
                    return reply(.failure("pid \(pid) did not arrive in profile \(profile.name)'s cgroup"))
                }
                followDemand(profile)
                reply(done(error == nil ? "scope \(unit)" : "cgroup \(path)"))
            } catch {
                reply(.failure("\(error)"))
            }
        }
    }

    /// The profile and the process a `vpnctl move` names, if the caller may use the profile
    /// and the process is its own (root: any).
    private func moveTarget(profile name: String, pid: Int32, by peer: Peer) throws -> (Profile, ProcessHandle) {
        let profile = try Authorization.profile(named: name, in: policy, directory: options.policyDirectory).get()
        try refuse(Authorization.check(peer, mayUse: profile))
        return (profile, try ownProcess(pid, of: peer))
    }

    private static func movedMessage(_ pid: Int32, _ profile: Profile) -> String {
        "pid \(pid) moved into profile \(profile.name); its existing connections keep their route, new ones use the tunnel"
    }

    func handle(_ request: ControlRequest, from caller: ControlServer.Caller) -> ControlResponse {
        guard let peer = Peer.of(socket: caller.fd, passed: caller.passed) else { return .failure("cannot identify the caller") }
        do {
            switch request {
            case let .exec(name):
                let profile = try profileForLaunch(name, by: peer)
                let process = try callingProcess(peer)
                try move(process, into: profile.cgroupPath(parent: options.cgroupParent), by: peer)
                followDemand(profile)
                log.info("\(peer.userName) started pid \(peer.pid) (\(process.commandName())) in profile \(profile.name)")
                return ControlResponse(ok: true, message: "pid \(peer.pid) is in profile \(profile.name)")
            case .bypass:
                try refuse(Authorization.check(peer, mayBypass: policy))
                guard policy.usesBypassSlice else {
                    throw RequestFailure("this policy has no bypass slice (it comes with [system] or with a profile's bypass.executables); a command started outside the profiles already goes direct: run it without vpnexec")
                }
                let process = try callingProcess(peer)
                try move(process, into: ExecutableRules.bypassCgroup(parent: options.cgroupParent), by: peer)
                log.info("\(peer.userName) started pid \(peer.pid) (\(process.commandName())) outside the profiles (bypass)")
                return ControlResponse(ok: true, message: "pid \(peer.pid) is outside every profile")
            case let .move(name, pid):
                let (profile, process) = try moveTarget(profile: name, pid: pid, by: peer)
                try move(process, into: profile.cgroupPath(parent: options.cgroupParent), by: peer)
                followDemand(profile)
                log.info("\(peer.userName) moved pid \(pid) (\(process.commandName())) into profile \(profile.name)")
                return ControlResponse(ok: true, message: Self.movedMessage(pid, profile))
            case let .moveOut(pid):
                return try moveOut(pid, by: peer)
            case .profiles:
                return ControlResponse(ok: true, profiles: try profileSummaries(for: peer))
            case let .members(name):
                return ControlResponse(ok: true, members: try members(of: name, for: peer))
            case .status:
                return ControlResponse(ok: true, status: try statusReport())
            case .plan:
                let (state, facts) = try reconciler.preview(from: options.policyDirectory)
                let names = Dictionary(facts.links.values.map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
                return ControlResponse(ok: true, message: TrustedEvaluator.planHeader(facts) + PlanText.render(state, interfaceNames: names))
            case .reload:
                if let refusal = Authorization.checkRoot(peer, action: "reload the policy") { return .failure(refusal.description) }
                return reload()
            case let .tunnelUp(name):
                return try holdTunnel(name, up: true, by: peer)
            case let .tunnelDown(name):
                return try holdTunnel(name, up: false, by: peer)
            case .down:
                if let refusal = Authorization.checkRoot(peer, action: "take vpnexec down") { return .failure(refusal.description) }
                try applier.teardown()
                AppliedMarker(socketPath: options.socketPath).clear()
                loop?.stop()
                log.notice("down: removed the nft table, rules and routes; exiting")
                return ControlResponse(ok: true, message: "vpnexec is down: no killswitch, no profile routing; vpnd exits")
            }
        } catch let failure as RequestFailure {
            return .failure(failure.description)
        } catch {
            log.error("request failed: \(error)")
            return .failure("\(error)")
        }
    }

    /// A process held by a pidfd opened before any check and verified alive after them (the
    /// checks were about this process, not one that took its pid), if the caller may move
    /// it at all: its own, or any for root.
    private func ownProcess(_ pid: Int32, of peer: Peer) throws -> ProcessHandle {
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
    private func moveOut(_ pid: Int32, by peer: Peer) throws -> ControlResponse {
        let process = try ownProcess(pid, of: peer)
        guard let source = CgroupHierarchy.cgroup(ofProcess: pid), process.isAlive else { throw RequestFailure("no process \(pid)") }
        guard let profile = policy.profiles.first(where: {
            let path = $0.cgroupPath(parent: options.cgroupParent)
            return source == path || source.hasPrefix(path + "/")
        }) else {
            throw RequestFailure("pid \(pid) is in no profile's cgroup (it is in \(source.isEmpty ? "the root cgroup" : source))")
        }
        guard let destination = SessionPlacement.destination(
            uid: process.realUID() ?? 0, sessionID: ProcessDetails.sessionID(of: pid), systemdManagesCgroups: sd_booted() > 0,
            exists: { hierarchy.id(of: $0) != nil }) else {
            throw RequestFailure("pid \(pid) belongs to no live login session, so there is no place its session would have it; stop it and start it again outside the profile")
        }
        try move(process, into: destination, by: peer)
        let place = destination.isEmpty ? "the root cgroup" : destination
        log.info("\(peer.userName) moved pid \(pid) (\(process.commandName())) out of profile \(profile.name) into \(place)")
        return ControlResponse(ok: true, message: "pid \(pid) moved out of profile \(profile.name) into \(place); its existing connections keep their route, new ones do not use the tunnel")
    }

    /// Before a move: every cgroup vpnd keeps exists and its id is in the applied maps.
    func prepareMove() throws {
        let paths = Planner.cgroups(policy, parent: options.cgroupParent)
        if paths.contains(where: { hierarchy.id(of: $0) == nil || hierarchy.id(of: $0) != appliedFacts?.cgroupIDs[$0] }) {
            try applyPolicy()
        }
    }

    /// The profile a launch names, if the caller may use it.
    private func profileForLaunch(_ name: String, by peer: Peer) throws -> Profile {
        let profile = try Authorization.profile(named: name, in: policy, directory: options.policyDirectory).get()
        try refuse(Authorization.check(peer, mayUse: profile))
        return profile
    }

    /// A refusal is logged, then answered.
    private func refuse(_ refusal: RequestFailure?) throws {
        guard let refusal else { return }
        log.notice("refused: \(refusal)")
        throw refusal
    }

    /// Whether the caller may take the process out of where it is now into `path`.
    func authorizeMove(_ process: ProcessHandle, into path: String, by peer: Peer) throws {
        guard let source = CgroupHierarchy.cgroup(ofProcess: process.pid), process.isAlive else {
            throw RequestFailure("process \(process.pid) exited")
        }
        try refuse(Authorization.check(peer, mayMove: process.pid, from: source, into: path,
                                       profileParent: options.cgroupParent, policy: policy))
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
        try prepareMove()
        try hierarchy.move(process, to: path)
        try prepareMove()
    }
}
