import Cgroups
import Control
import Facts

/// `vpnctl explain`: a user asks about its own processes and the profiles it may use, as
/// for `vpnctl move`; root about any. What /proc shows every user (another's cgroup) is not
/// the question: the marks, routes, resolvers and tunnel state of a profile the caller may
/// not use are.
extension RequestHandler {
    func explanation(pid: Int32?, profile name: String?, for peer: Peer) throws -> Explanation {
        switch (pid, name) {
        case let (pid?, nil):
            // Held by a pidfd across the reads, and alive after them: they were this process's.
            let process = try ProcessHandle.open(pid: pid)
            let owner = process.realUID()
            let cgroup = CgroupHierarchy.cgroup(ofProcess: pid)
            let command = ProcessDetails.commandLine(of: pid)
            guard process.isAlive, let owner, let cgroup else { throw RequestFailure("no process \(pid)") }
            guard peer.uid == 0 || owner == peer.uid else {
                throw RequestFailure("process \(pid) belongs to uid \(owner); \(peer.userName) may explain only its own processes (root may explain any)")
            }
            var explanation = try answers.explain(cgroup: cgroup, pid: pid, uid: owner)
            // The daemon reads by pid too (its program, its namespace's id): still this process.
            guard process.isAlive else { throw RequestFailure("no process \(pid)") }
            explanation.command = command
            return explanation
        case let (nil, name?):
            let profile = try profileForUse(name, by: peer)
            return try answers.explain(cgroup: profile.cgroupPath(parent: cgroupParent), pid: nil, uid: peer.uid)
        default:
            throw RequestFailure("explain takes a process id or a profile, not both")
        }
    }
}
