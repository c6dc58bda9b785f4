import Policy

/// Who may do what, and the refusal messages that say which rule decided.
enum Authorization {
    static func profile(named name: String, in policy: Policy, directory: String) -> Result<Profile, RequestFailure> {
        if let profile = policy.profile(named: name) { return .success(profile) }
        let known = policy.profiles.map(\.name)
        if known.isEmpty {
            return .failure(RequestFailure("unknown profile \"\(name)\": no profiles are defined in \(directory)"))
        }
        return .failure(RequestFailure("unknown profile \"\(name)\"; known profiles: \(known.joined(separator: ", "))"))
    }

    static func check(_ peer: Peer, mayUse profile: Profile) -> RequestFailure? {
        guard !profile.access.allows(uid: peer.uid, groups: peer.groups) else { return nil }
        return RequestFailure("\(peer.userName) may not use profile \"\(profile.name)\": the rule at \(profile.access.location) allows \(profile.access.summary)")
    }

    static func checkRoot(_ peer: Peer, action: String) -> RequestFailure? {
        peer.uid == 0 ? nil : RequestFailure("only root may \(action) (you are \(peer.userName))")
    }
}

struct RequestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
