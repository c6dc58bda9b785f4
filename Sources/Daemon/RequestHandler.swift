import Cgroups
import Control
import CSystemd
import Facts
import Plan
import Policy
import Routing
import ServiceSupport
import Launch

/// What vpnd does for vpnexec and vpnctl: each request decided from the kernel's account of
/// the caller (Peer) and the policy in force, processes moved through pidfds. It holds what
/// those decisions need (the reconciler, the cgroup tree, systemd's scopes); what only the
/// running daemon knows (status, reload, down, the links, its tunnels) it asks of
/// `answers` (RequestAnswering). With a fake applier, cgroup tree and answers, a unit test
/// (RequestHandlerTests).
final class RequestHandler {
    let reconciler: Reconciler
    let cgroups: any CgroupMoving
    let policyDirectory: String
    let cgroupParent: String
    let log: Log
    /// The daemon, which holds this handler while it serves.
    unowned let answers: any RequestAnswering
    /// Where systemd owns the cgroup tree, while vpnd serves: launches and moves become its scopes.
    var scopes: (any ScopeStarting)?
    /// Whether systemd places processes (where `vpnctl move --out` may send one of no session).
    var systemdManagesCgroups = sd_booted() > 0
    /// A process's login session (the audit session id).
    var sessionID: (Int32) -> UInt32? = ProcessDetails.sessionID(of:)
    var policy: Policy { reconciler.policy }

    init(reconciler: Reconciler, cgroups: any CgroupMoving, policyDirectory: String, cgroupParent: String, log: Log, answers: any RequestAnswering) {
        self.reconciler = reconciler
        self.cgroups = cgroups
        self.policyDirectory = policyDirectory
        self.cgroupParent = cgroupParent
        self.log = log
        self.answers = answers
    }

    /// Every request; one that waits (a placement through systemd) answers through `reply`
    /// later. `peer`: nil when the kernel could not say who called.
    func handle(_ request: ControlRequest, from peer: Peer?, reply: @escaping (ControlResponse) -> Void) {
        guard let scopes, let peer else { return reply(handle(request, from: peer)) }
        do {
            switch request {
            case let .exec(name):
                let profile = try profileForUse(name, by: peer)
                // The caller waits for this answer, so its pid stays its own meanwhile.
                let process = try callingProcess(peer)
                place(process, in: profile, by: peer, scopes: scopes, reply: reply) { [log] placement in
                    log.info("\(peer.userName) started pid \(peer.pid) (\(process.commandName())) in profile \(profile.name), \(placement)")
                    return ControlResponse(ok: true, message: "pid \(peer.pid) is in profile \(profile.name)", launch: self.launchReport(profile))
                }
            case let .move(name, pid):
                let (profile, process) = try moveTarget(profile: name, pid: pid, by: peer)
                place(process, in: profile, by: peer, scopes: scopes, reply: reply) { [log] placement in
                    log.info("\(peer.userName) moved pid \(pid) (\(process.commandName())) into profile \(profile.name), \(placement)")
                    return ControlResponse(ok: true, message: Self.movedMessage(pid, profile))
                }
            default:
                reply(handle(request, from: peer))
            }
        } catch let failure as RequestFailure {
            reply(.failure(failure.description))
        } catch {
            log.error("request failed: \(error)")
            reply(.failure("\(error)"))
        }
    }

    /// Every request, answered at once (processes moved by vpnd itself).
    func handle(_ request: ControlRequest, from peer: Peer?) -> ControlResponse {
        guard let peer else { return .failure("cannot identify the caller") }
        do {
            switch request {
            case let .exec(name):
                let profile = try profileForUse(name, by: peer)
                let process = try callingProcess(peer)
                try move(process, into: profile.cgroupPath(parent: cgroupParent), by: peer)
                answers.joined(profile)
                log.info("\(peer.userName) started pid \(peer.pid) (\(process.commandName())) in profile \(profile.name)")
                return ControlResponse(ok: true, message: "pid \(peer.pid) is in profile \(profile.name)", launch: launchReport(profile))
            case .bypass:
                try refuse(Authorization.check(peer, mayBypass: policy))
                guard policy.usesBypassSlice else {
                    throw RequestFailure("this policy has no bypass slice (it comes with [system] or with a profile's bypass.executables); a command started outside the profiles already goes direct: run it without vpnexec")
                }
                let process = try callingProcess(peer)
                try move(process, into: ExecutableRules.bypassCgroup(parent: cgroupParent), by: peer)
                log.info("\(peer.userName) started pid \(peer.pid) (\(process.commandName())) outside the profiles (bypass)")
                return ControlResponse(ok: true, message: "pid \(peer.pid) is outside every profile")
            case let .move(name, pid):
                let (profile, process) = try moveTarget(profile: name, pid: pid, by: peer)
                try move(process, into: profile.cgroupPath(parent: cgroupParent), by: peer)
                answers.joined(profile)
                log.info("\(peer.userName) moved pid \(pid) (\(process.commandName())) into profile \(profile.name)")
                return ControlResponse(ok: true, message: Self.movedMessage(pid, profile))
            case let .moveOut(pid):
                return try moveOut(pid, by: peer)
            case .profiles:
                return ControlResponse(ok: true, profiles: try profileSummaries(for: peer))
            case let .members(name):
                return try membersAnswer(of: name, for: peer)
            case .status:
                return ControlResponse(ok: true, status: statusView(try answers.status(), for: peer))
            case .plan:
                let (state, facts) = try reconciler.preview(from: policyDirectory)
                // Every interface by name (loopback's routes too), not only the tunnels' links.
                let names = Dictionary(((try? answers.links()) ?? Array(facts.links.values)).map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
                return ControlResponse(ok: true, message: TrustedEvaluator.planHeader(facts) + PlanText.render(state, interfaceNames: names))
            case .reload:
                if let refusal = Authorization.checkRoot(peer, action: "reload the policy") { return .failure(refusal.description) }
                return answers.reload()
            case let .tunnelUp(name):
                return try holdTunnel(name, up: true, by: peer)
            case let .tunnelDown(name):
                return try holdTunnel(name, up: false, by: peer)
            case let .explain(pid, name):
                return ControlResponse(ok: true, explanation: try explanation(pid: pid, profile: name, for: peer))
            case .down:
                if let refusal = Authorization.checkRoot(peer, action: "take vpnexec down") { return .failure(refusal.description) }
                return try answers.down()
            }
        } catch let failure as RequestFailure {
            return .failure(failure.description)
        } catch {
            log.error("request failed: \(error)")
            return .failure("\(error)")
        }
    }

    /// The profile a launch or `vpnctl up/down/move` names, if the caller may use it.
    func profileForUse(_ name: String, by peer: Peer) throws -> Profile {
        let profile = try Authorization.profile(named: name, in: policy, directory: policyDirectory, for: peer).get()
        try refuse(Authorization.check(peer, mayUse: profile))
        return profile
    }

    /// What vpnexec warns of before it execs: where the profile's members are (a browser
    /// already running outside them takes the launch over) and its tunnel if it holds them.
    func launchReport(_ profile: Profile) -> LaunchReport {
        LaunchReport(cgroups: reconciler.memberCgroups(of: profile, parent: cgroupParent), heldTunnel: answers.heldTunnel(profile))
    }

    /// A refusal is logged, then answered.
    func refuse(_ refusal: RequestFailure?) throws {
        guard let refusal else { return }
        log.notice("refused: \(refusal)")
        throw refusal
    }

    /// `vpnctl up PROFILE` / `vpnctl down PROFILE`: root, or a user the profile allows.
    private func holdTunnel(_ name: String, up: Bool, by peer: Peer) throws -> ControlResponse {
        let profile = try profileForUse(name, by: peer)
        let interface = profile.tunnel.interfaceName
        guard profile.tunnel.isBuiltIn else {
            throw RequestFailure("profile \(name) uses interface \(interface), which vpnd does not own (tunnel.interface): bring it \(up ? "up" : "down") with whatever runs it (wg-quick, systemd-networkd, NetworkManager); vpnctl up/down work on built-in tunnels (tunnel.wireguard)")
        }
        guard answers.hold(interface: interface, up: up) else {
            throw RequestFailure("profile \(name)'s built-in tunnel \(interface) is not running (see vpnd's log); the killswitch holds its members")
        }
        log.notice("\(peer.userName): vpnctl \(up ? "up" : "down") \(name)")
        return ControlResponse(ok: true, message: up
            ? "profile \(name): tunnel \(interface) is coming up and stays up until `vpnctl down \(name)` or a reload"
            : "profile \(name): tunnel \(interface) is down and held down (members' traffic is held by the killswitch) until `vpnctl up \(name)` or a reload")
    }
}
