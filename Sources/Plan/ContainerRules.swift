import Nftables
import Policy

/// A member's network namespace of its own (a container in the profile's slice) that
/// reaches the host by a veth: what arrives from the veth's host end is the profile's. Its
/// packets get the profile's mark before they are routed (prerouting), so the profile's
/// rule and table route them as a member's (into the tunnel, or nowhere while it is down),
/// the killswitch holds them by that mark on the way out as it holds a member's, and they
/// leave the tunnel with its address (masquerade: the peer knows no container address).
/// The rules are the kernel's: with vpnd dead they stay, and so does the namespace's
/// cookie in the programs' let-out map (SocketProgramPlan: `namespacesLetOut`), which
/// follows these rules in the apply.
///
/// DNS is not yet the profile proxy's for a container: its queries to port 53, UDP or TCP,
/// whatever address they ask (the host's bridge address, where a host resolver would
/// answer from outside the tunnel), are dropped and counted before any routing.
///
/// The interface is matched by name: a runtime that makes the container again with the same
/// veth name (nspawn's `ve-NAME`) has its new namespace routed by these rules at once,
/// while its packets are held at the cgroup until vpnd lets the new cookie out.
public enum ContainerRules {
    static let markChain = "containers_in"
    static let natChain = "containers_nat"

    /// The counter of a profile's containers' DNS queries dropped.
    public static func dnsCounter(_ profile: String) -> String { "\(profile)_container_dns" }

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        var marks: [NftRule] = [], masquerades: [NftRule] = []
        var counted: Set<String> = []
        for container in facts.containers {
            guard case let .routed(interfaces) = container.state,
                  let profile = policy.profiles.first(where: { $0.name == container.profile }) else { continue }
            let counter = dnsCounter(profile.name)
            if counted.insert(counter).inserted {
                table.counters.append(NftCounter(name: counter, comment: "profile \(profile.name): containers' DNS queries, dropped (not yet answered by the profile's proxy)"))
            }
            for interface in interfaces {
                let from = NftStatement.inputInterfaceName(interface, negated: false)
                marks += NftTransport.allCases.map { transport in
                    NftRule([from, .destinationPort(transport, 53), .namedCounter(counter), .verdict(.drop)])
                }
                marks.append(NftRule([from, .setMark(profile.mark.value)],
                                     comment: "network namespace \(container.cookie) of profile \(profile.name)"))
                masquerades.append(NftRule([from, .outputInterfaceName(profile.tunnel.interfaceName, negated: false), .masquerade]))
            }
        }
        guard !marks.isEmpty else { return }
        table.chains += [
            NftChain(name: markChain, base: NftBaseChain(kind: .filter, hook: .prerouting, priority: NftBaseChain.mangle), rules: marks),
            NftChain(name: natChain, base: NftBaseChain(kind: .nat, hook: .postrouting, priority: NftBaseChain.srcnat - 1), rules: masquerades),
        ]
    }

    /// The namespaces whose rules this plan holds: their cookies may leave their cgroups.
    static func letOut(_ policy: Policy, facts: RuntimeFacts) -> Set<UInt64> {
        Set(facts.containers.compactMap { container in
            guard case .routed = container.state, policy.profiles.contains(where: { $0.name == container.profile }) else { return nil }
            return container.cookie
        })
    }
}
