import Cgroups
import Names

/// The profiles' varlink servers ask the service: a call goes to the profile's resolver as
/// it is now, and only the profile's members (as the last apply left them) are answered.
extension DNSService: ProfileNameAnswering {
    public func answer(_ query: [UInt8], overTCP: Bool, for profile: String, _ reply: @escaping ([UInt8]?) -> Void) {
        guard let resolver = resolvers[profile] else { return reply(nil) }
        resolver.localQuery(query, overTCP: overTCP, now: .now(), reply)
    }

    public func admits(pid: Int32, to profile: String) -> Bool {
        guard let cgroup = CgroupHierarchy.cgroup(ofProcess: pid) else { return false }
        return members.admits(cgroup, to: profile)
    }
}
