import Plan
import ServiceSupport

/// What an apply changed that an admin should read in the log: cgroups held for want of
/// their socket programs and released, units that joined a profile by name or were refused,
/// IPv6 turned off or on. Each is said once, when it changes, not at every pass.
enum AppliedChanges {
    static func lines(_ facts: RuntimeFacts, before: RuntimeFacts?) -> [Log.Line] {
        var lines: [Log.Line] = []
        for path in facts.unguardedCgroups.keys.sorted() where before?.unguardedCgroups[path] == nil {
            lines.append(.init(.error, "\(path) is held: the kernel does not have its socket programs, so its traffic is dropped (only loopback) and nothing is placed there until they are"))
        }
        for path in (before?.unguardedCgroups ?? [:]).keys.sorted() where facts.unguardedCgroups[path] == nil {
            lines.append(.init(.notice, "\(path) is held no more: its socket programs are attached"))
        }
        for (path, joined) in facts.joinedCgroups.sorted(by: { $0.key < $1.key }) where before?.joinedCgroups[path] != joined {
            lines.append(.init(.info, "\(path) joined profile \(joined.profile) (named for it)"))
        }
        for (path, reason) in facts.refusedCgroups.sorted(by: { $0.key < $1.key }) where before?.refusedCgroups[path] != reason {
            lines.append(.init(.notice, "refused: \(path) is named to join a profile but \(reason); its traffic does not enter the tunnel"))
        }
        // IPv6 off (disable_ipv6): nothing of ours needs it, but what it would carry is held.
        if !facts.loopbackIPv6, before?.loopbackIPv6 != false {
            lines.append(.init(.notice, "IPv6 is off on lo: members' IPv6 DNS queries are refused, not steered to their proxies"))
        } else if facts.loopbackIPv6, before?.loopbackIPv6 == false {
            lines.append(.init(.notice, "IPv6 is on again on lo: members' IPv6 DNS queries go to their proxies"))
        }
        for (name, link) in facts.links.sorted(by: { $0.key < $1.key }) where !link.ipv6 && before?.links[name]?.ipv6 != false {
            lines.append(.init(.notice, "IPv6 is off on \(name): no IPv6 route through it; its profiles' IPv6 is held as while it is down"))
        }
        return lines
    }
}
