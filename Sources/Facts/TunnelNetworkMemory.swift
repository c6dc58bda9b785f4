import Addresses
import Plan
import Policy
import TunnelFiles

/// The networks each tunnel is on beyond what its interface shows now: a built-in tunnel's
/// from its files (also while it is down or gone), any tunnel's as seen before. With
/// allow_lan they stay in the tunnel, so a member's traffic to them never goes direct
/// while the tunnel is away. vpnd keeps one memory for its life; `vpnctl plan --policy-dir`
/// starts with an empty one (the plan's header says so).
public struct TunnelNetworkMemory: Sendable {
    /// Every network a tunnel interface has been seen on, by interface.
    public private(set) var seen: [String: [IPPrefix]] = [:]

    public init() {}

    /// Adds the built-in tunnels' networks to `facts`, remembers every tunnel's, and gives
    /// allow_lan profiles' tunnels all they were ever seen on.
    public mutating func complete(_ facts: inout RuntimeFacts, policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) {
        for (interface, loaded) in tunnelFiles {
            facts.tunnelNetworks[interface, default: []] += loaded.networks
        }
        for (interface, networks) in facts.tunnelNetworks {
            seen[interface] = Array(Set(networks + (seen[interface] ?? [])))
        }
        for (interface, networks) in seen where policy.profiles.contains(where: { $0.allowLAN && $0.tunnel.interfaceName == interface }) {
            facts.tunnelNetworks[interface] = IPPrefix.covering(networks + (facts.tunnelNetworks[interface] ?? []))
        }
    }
}

extension TunnelFiles.Loaded {
    /// The networks of the tunnel's addresses, in every server's file.
    public var networks: [IPPrefix] {
        (servers.isEmpty ? [config] : servers.map(\.config)).flatMap(\.interface.addresses).map(\.network)
    }
}

extension FactsReader {
    /// The facts vpnd plans from and `vpnctl plan` shows: what the machine shows now, with
    /// the tunnels' networks completed from their files and `memory`.
    public func read(_ policy: Policy, cgroupParent: String, tunnelFiles: [String: TunnelFiles.Loaded],
                     memory: inout TunnelNetworkMemory) throws -> RuntimeFacts {
        var facts = try read(policy, cgroupParent: cgroupParent)
        memory.complete(&facts, policy: policy, tunnelFiles: tunnelFiles)
        return facts
    }
}
