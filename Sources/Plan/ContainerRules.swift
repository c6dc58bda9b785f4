import Nftables
import Policy
import SocketPrograms

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
/// Its DNS, UDP and TCP, to whatever address it asks (the host's address on the veth, a
/// public resolver), is the profile proxy's as a member's is: a rule for the mark, the veth,
/// the transport and port 53 selects the profile's DNS table (DNSRouting), so it is
/// delivered on this host, where the input hook gives it the profile's steering address as
/// its source (source NAT) before any socket is looked up, and the steering program hands it
/// to the proxy by that address. The answer goes back from the address asked, the NAT
/// undone. A query no proxy takes is refused as a member's is
/// (DNSRouting.steeredQueryGuards), so no resolver of the host answers it from outside the
/// tunnel. The proxy takes a member's TCP connection by the mark of the socket that made
/// it; a container's socket is not in this namespace, so it takes one no socket here made
/// when the kernel's connection tracking says this NAT translated its source (DNSService):
/// no local process and no packet from elsewhere gets that translation. For a profile
/// whose DNS is not served (a trusted network's `disconnect`), a container's queries to
/// port 53 are dropped and counted before routing.
///
/// `forward.interfaces` (a VM's bridge or tap, a LAN segment the host routes for) are ways in
/// of the same kind as a container's own veth, by the policy: what arrives on them is the
/// profile's, with the same rules.
///
/// A veth that is a bridge's port (podman's, docker's, nspawn `--network-bridge`) is marked
/// in the bridge family's table, by the port's name, before the bridge passes the packet up;
/// the rules here then know it by the bridge and that mark.
///
/// The interface is matched by name: a runtime that makes the container again with the same
/// veth name (nspawn's `ve-NAME`) has its new namespace routed by these rules at once,
/// while its packets are held at the cgroup until vpnd lets the new cookie out.
public enum ContainerRules {
    static let markChain = "containers_in"
    static let natChain = "containers_nat"
    static let dnsNATChain = "containers_dns_nat"
    static let dnsGuardChain = "containers_dns"

    /// The counter of a profile's containers' DNS queries dropped (its DNS not served).
    public static func dnsCounter(_ profile: String) -> String { "\(profile)_container_dns" }

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        // The marks first (a veth's own; a bridge's port has it from the bridge table), then
        // what is dropped by them.
        var marks: [NftRule] = [], drops: [NftRule] = [], masquerades: [NftRule] = [], queryNAT: [NftRule] = [], queryGuards: [NftRule] = []
        var counted: Set<String> = []
        for (profile, what, way) in ways(policy, facts: facts) {
            let counter = dnsCounter(profile.name)
            let served = SocketProgramPlan.servesDNS(profile, facts: facts)
            if counted.insert(counter).inserted {
                table.counters.append(NftCounter(name: counter, comment: "profile \(profile.name): containers' DNS queries no proxy answers (DNS not served), dropped"))
                // By the mark alone, not on `lo` (where members' own steered queries pass with
                // the same mark): with br_netfilter loaded (docker), prerouting names a
                // bridge's port, not the bridge.
                drops += (served ? [] : NftTransport.allCases).map { transport in
                    NftRule([.markMatch(mask: policy.routing.markMask, value: profile.mark.value, negated: false), .inputInterfaceName("lo", negated: true),
                             .destinationPort(transport, 53), .namedCounter(counter), .verdict(.drop)])
                }
            }
            let from: [NftStatement]
            switch way {
            case let .veth(interface):
                from = [.inputInterfaceName(interface, negated: false)]
                marks.append(NftRule(from + [.setMark(profile.mark.value)], comment: what))
            case let .bridge(bridge):
                from = [.inputInterfaceName(bridge, negated: false), .markMatch(mask: policy.routing.markMask, value: profile.mark.value, negated: false)]
            }
            masquerades.append(NftRule(from + [.outputInterfaceName(profile.tunnel.interfaceName, negated: false), .masquerade]))
            guard served else { continue }
            for transport in NftTransport.allCases {
                let query = from + [.destinationPort(transport, 53)]
                queryNAT += [false, true].filter { !$0 || facts.loopbackIPv6 }.map { ipv6 in
                    NftRule(query + [.sourceNAT(DNSRouting.steeringAddress(profile, ipv6: ipv6))])
                }
                queryGuards.append(NftRule(query + [.verdict(.goto(DNSRouting.steeredChain))]))
            }
        }
        guard !counted.isEmpty else { return }
        table.chains += [
            NftChain(name: markChain, base: NftBaseChain(kind: .filter, hook: .prerouting, priority: NftBaseChain.mangle), rules: marks + drops),
            NftChain(name: natChain, base: NftBaseChain(kind: .nat, hook: .postrouting, priority: NftBaseChain.srcnat - 1), rules: masquerades),
        ]
        guard !queryNAT.isEmpty else { return }
        // The guard after the source NAT (a nat chain's priority on input is srcnat): its
        // socket lookup sees the steering address, as the steering program does.
        table.chains += [
            NftChain(name: dnsNATChain, base: NftBaseChain(kind: .nat, hook: .input, priority: NftBaseChain.srcnat), rules: queryNAT),
            NftChain(name: dnsGuardChain, base: NftBaseChain(kind: .filter, hook: .input, priority: NftBaseChain.srcnat + 1), rules: queryGuards),
        ]
    }

    /// How a routed container's packets come in: on a veth of its own (by name), or up from a
    /// bridge whose port it is (by the bridge's name and the mark the bridge table gave).
    enum Way: Hashable {
        case veth(String), bridge(String)

        /// The interface a routed packet has as its input (`iif` of a routing rule).
        var interface: String {
            switch self {
            case let .veth(name), let .bridge(name): return name
            }
        }
    }

    /// Each profile's `forward.interfaces`, then each routed container's ways in, a bridge
    /// once a profile; with what they are (a rule's comment).
    static func ways(_ policy: Policy, facts: RuntimeFacts) -> [(Profile, String, Way)] {
        var seen: Set<[String]> = []
        var ways: [(Profile, String, Way)] = []
        for profile in policy.profiles {
            for interface in profile.forwardInterfaces where !facts.uplinks.contains(interface) && seen.insert([profile.name, interface]).inserted {
                ways.append((profile, "forward.interfaces of profile \(profile.name)", .veth(interface)))
            }
        }
        for container in facts.containers {
            guard case let .routed(interfaces) = container.state,
                  let profile = policy.profiles.first(where: { $0.name == container.profile }) else { continue }
            for interface in interfaces {
                let way = container.bridges[interface].map(Way.bridge) ?? .veth(interface)
                if seen.insert([profile.name, way.interface]).inserted {
                    ways.append((profile, "network namespace \(container.cookie) of profile \(profile.name)", way))
                }
            }
        }
        return ways
    }

    /// The bridge family's table: each routed container's bridge port marks what arrives on
    /// it with the profile's mark, before the bridge passes it up to routing. Nil without one.
    static let bridgeChain = "container_ports"

    static func bridgeTable(_ policy: Policy, facts: RuntimeFacts) -> NftTable? {
        var rules: [NftRule] = []
        for container in facts.containers {
            guard case let .routed(interfaces) = container.state,
                  let profile = policy.profiles.first(where: { $0.name == container.profile }) else { continue }
            for interface in interfaces where container.bridges[interface] != nil {
                rules.append(NftRule([.inputInterfaceName(interface, negated: false), .setMark(profile.mark.value)],
                                     comment: "network namespace \(container.cookie) of profile \(profile.name)"))
            }
        }
        guard !rules.isEmpty else { return nil }
        return NftTable(family: .bridge, name: vpnexecTableName, chains: [
            NftChain(name: bridgeChain, base: NftBaseChain(kind: .filter, hook: .prerouting, priority: -200), rules: rules),
        ])
    }

    /// Where the profile's routed containers' packets come in (the veths of their own, the
    /// bridges): what the DNS rules match as `iif`.
    static func interfaces(of profile: Profile, facts: RuntimeFacts) -> [String] {
        var interfaces = profile.forwardInterfaces.filter { !facts.uplinks.contains($0) }
        for container in facts.containers where container.profile == profile.name {
            guard case let .routed(ends) = container.state else { continue }
            for end in ends {
                let interface = container.bridges[end] ?? end
                if !interfaces.contains(interface) { interfaces.append(interface) }
            }
        }
        return interfaces
    }

    /// The namespaces whose rules this plan holds, and those relayed (which need none):
    /// their cookies may leave their cgroups, each kept with where it is (what a restarted
    /// vpnd finds it by).
    static func letOut(_ policy: Policy, facts: RuntimeFacts) -> [UInt64: ForeignNamespaces.Place] {
        var places: [UInt64: ForeignNamespaces.Place] = [:]
        for container in facts.containers {
            if case .held = container.state { continue }
            guard let namespace = container.namespace,
                  let profile = policy.profiles.first(where: { $0.name == container.profile }) else { continue }
            places[container.cookie] = ForeignNamespaces.Place(namespace: namespace, profileIndex: profile.index)
        }
        return places
    }
}
