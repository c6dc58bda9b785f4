import Cgroups
import Control
import Facts
import Policy

/// `vpnctl profiles`, `vpnctl members` and `vpnctl status`: what the caller may use, and
/// who is in it. A user sees the profiles the policy lets it use; root sees all.
extension RequestHandler {
    func usableProfiles(by peer: Peer) -> [Profile] {
        policy.profiles.filter { peer.uid == 0 || Authorization.check(peer, mayUse: $0) == nil }
    }

    /// `vpnctl status` (and metrics): root's is the whole report; a user's has the profiles
    /// it may use and nothing host-wide (StatusReport.forUser).
    func statusView(_ report: StatusReport, for peer: Peer) -> StatusReport {
        peer.uid == 0 ? report : report.forUser(usable: Set(usableProfiles(by: peer).map(\.name)))
    }

    func memberCount(of profile: Profile) -> Int {
        reconciler.memberCgroups(of: profile, parent: cgroupParent).reduce(0) { $0 + cgroups.processes(in: $1).count }
    }

    func profileSummaries(for peer: Peer) throws -> [ProfileSummary] {
        let links = try answers.links()
        return usableProfiles(by: peer).map { profile in
            var summary = ProfileSummary(name: profile.name, interface: profile.tunnel.interfaceName,
                                         state: StatusBuilder.tunnelState(links.first { $0.name == profile.tunnel.interfaceName }),
                                         builtIn: profile.tunnel.isBuiltIn, killswitch: profile.killswitch)
            summary.members = memberCount(of: profile)
            return summary
        }
    }

    /// `vpnctl members`: the processes, then the profiles' network namespaces (containers,
    /// routed, relayed and held) and forward.interfaces as status has them.
    func membersAnswer(of name: String?, for peer: Peer) throws -> ControlResponse {
        var response = ControlResponse(ok: true, members: try members(of: name, for: peer))
        guard let status = try? statusView(answers.status(), for: peer) else { return response }
        let names = Set(name.map { [$0] } ?? usableProfiles(by: peer).map(\.name))
        response.routedNamespaces = status.routedNamespaces.filter { names.contains($0.profile) }
        response.relayedNamespaces = status.relayedNamespaces.filter { names.contains($0.profile) }
        response.heldNamespaces = status.heldNamespaces.filter { $0.profile.map(names.contains) ?? false }
        response.forwardInterfaces = Dictionary(status.profiles.filter { names.contains($0.name) }.compactMap { profile in
            profile.forwardInterfaces.map { (profile.name, $0) }
        }, uniquingKeysWith: { a, _ in a })
        return response
    }

    /// Every process of the named profile (which the caller must be allowed to use), or of
    /// every profile it may use, in policy order, then by pid.
    func members(of name: String?, for peer: Peer) throws -> [MemberReport] {
        var profiles = usableProfiles(by: peer)
        if let name {
            let profile = try Authorization.profile(named: name, in: policy, directory: policyDirectory, for: peer).get()
            if peer.uid != 0, let refusal = Authorization.check(peer, mayUse: profile) { throw refusal }
            profiles = [profile]
        }
        return profiles.flatMap { profile in
            reconciler.memberCgroups(of: profile, parent: cgroupParent).flatMap { cgroups.processes(in: $0) }.sorted().compactMap { pid -> MemberReport? in
                // One that exited while it was read is no longer a member.
                guard let uid = ProcessHandle.realUID(of: pid), let since = ProcessDetails.startTime(of: pid) else { return nil }
                return MemberReport(pid: pid, uid: uid, user: UserNames.name(of: uid) ?? String(uid), profile: profile.name,
                                    command: ProcessDetails.commandLine(of: pid), since: since)
            }
        }
    }
}
