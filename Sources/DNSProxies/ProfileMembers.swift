/// The cgroups of each profile's members as the last apply left them: its own and those
/// that joined it (a user's vpn-NAME.slice, a listed app's scope). A process in one of them,
/// or below, is a member its profile's names server answers.
struct ProfileMembers: Equatable {
    var cgroups: [String: [String]] = [:]

    func admits(_ cgroup: String, to profile: String) -> Bool {
        cgroups[profile]?.contains { cgroup == $0 || cgroup.hasPrefix($0 + "/") } ?? false
    }
}
