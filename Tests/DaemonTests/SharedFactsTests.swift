import Addresses
@testable import Daemon
import Facts
import Foundation
import Plan
import Policy
import Routing
import Testing

/// vpnd and `vpnctl plan --policy-dir` read their facts with the same reader: a built-in
/// tunnel's networks come from its file for both (also while it is down); only the
/// networks a tunnel was seen on before are vpnd's memory.
@Suite struct SharedFactsTests {
    @Test func tunnelNetworksFromFilesAndMemory() throws {
        let folder = try ReconcilerTests.PolicyFolder("")
        let conf = folder.path + "/work.conf"
        try "[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\nAddress = 10.64.0.2/24, fd64::2/64\n[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nEndpoint = 192.0.2.1:51820\nAllowedIPs = 0.0.0.0/0\n"
            .write(toFile: conf, atomically: true, encoding: .utf8)
        #expect(chmod(conf, 0o600) == 0)
        // The policy beside it is read as *.toml only.
        try folder.write("""
            [profile.work]
            tunnel = { wireguard = "\(conf)", interface = "wgw" }
            allow_lan = true
            [profile.home]
            tunnel.interface = "tun0"
            allow_lan = true
            """)
        let loaded = try LoadedPolicy(directory: folder.path)
        #expect(loaded.tunnelFiles.keys.sorted() == ["wgw"])

        // tun0 up on 10.9.0.2/24; wgw not running (no link at all).
        var links = [Link(index: 8, name: "tun0", isUp: true, isRunning: true, mtu: 1500)]
        var addresses = [InterfaceAddress(interfaceIndex: 8, prefix: IPPrefix("10.9.0.2/24")!)]
        let reader = FactsReader(hierarchy: nil, links: { links }, addresses: { addresses })
        var vpnd = TunnelNetworkMemory()
        let first = try reader.read(loaded.policy, cgroupParent: "vpn.slice", tunnelFiles: loaded.tunnelFiles, memory: &vpnd)
        #expect(Set(first.tunnelNetworks["wgw"] ?? []) == [IPPrefix("10.64.0.0/24")!, IPPrefix("fd64::/64")!])
        #expect(first.tunnelNetworks["tun0"] == [IPPrefix("10.9.0.0/24")!])

        // tun0 gone: vpnd keeps its network tunneled; a reader without that memory (vpnctl) cannot.
        links = []
        addresses = []
        let later = try reader.read(loaded.policy, cgroupParent: "vpn.slice", tunnelFiles: loaded.tunnelFiles, memory: &vpnd)
        #expect(later.tunnelNetworks["tun0"] == [IPPrefix("10.9.0.0/24")!])
        var fresh = TunnelNetworkMemory()
        let offline = try reader.read(loaded.policy, cgroupParent: "vpn.slice", tunnelFiles: loaded.tunnelFiles, memory: &fresh)
        #expect(offline.tunnelNetworks["tun0"] == nil)
        #expect(offline.tunnelNetworks["wgw"] == later.tunnelNetworks["wgw"], "a built-in tunnel's networks need no memory")
        // The plan differs only where the header of `vpnctl plan --policy-dir` says it may.
        #expect(Planner.plan(loaded.policy, facts: offline) != Planner.plan(loaded.policy, facts: later))
    }
}
