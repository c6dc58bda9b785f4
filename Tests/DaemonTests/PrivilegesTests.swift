import Foundation
import Testing
@testable import Daemon
import ServiceSupport

@Suite struct PrivilegesTests {
    @Test func sandboxAllowsWritesInVpndsPlacesOnly() {
        let sandbox = Sandbox.forDaemon(cgroupRoot: "/sys/fs/cgroup", socketDirectory: "/run/vpnexec", wireguardDirectory: "/run/wireguard")
        #expect(sandbox.tcpListen == nil && sandbox.tcpConnect == [53], "TCP only to ask resolvers: its listeners are bound before")
        #expect(sandbox.rules.map(\.path) == ["/sys/fs/cgroup", "/proc/sys/net", "/run/vpnexec", "/run/wireguard", "/dev/net/tun"])
        #expect(sandbox.rules.allSatisfy { !$0.access.contains(.execute) }, "no program may be executed anywhere")
        #expect(sandbox.rules[0].access == [.writeFile, .makeDirectory, .removeDirectory])
        // The control socket and the empty policy-applied marker, made; nothing written.
        #expect(sandbox.rules[2].access == [.makeSocket, .makeRegular, .removeFile])
        // Reading is never confined (a reload may name a wg-quick file anywhere); what a
        // newer kernel can also confine is, as soon as it can.
        let reading: UInt64 = 1 << 2 | 1 << 3
        #expect(Sandbox.Access.handled(abi: 1).rawValue & reading == 0)
        #expect(Sandbox.Access.handled(abi: 1).rawValue == 0b1_1111_1111_0011)
        #expect(Sandbox.Access.handled(abi: 5).rawValue == 0b1111_1111_1111_0011)
    }

    @Test func directoryOverrideOnlyWhereRootCannotWriteAsOwner() throws {
        let base = NSTemporaryDirectory() + "vx-priv-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: base + "/open", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/sealed", withIntermediateDirectories: true)
        defer {
            chmod(base + "/sealed", 0o755)
            try? FileManager.default.removeItem(atPath: base)
        }
        #expect(chmod(base + "/open", 0o755) == 0 && chmod(base + "/sealed", 0o555) == 0)
        #expect(Privileges.directoryOverrideNeeded([base + "/open"]) == (geteuid() != 0), "root-owned 0755: no override needed")
        #expect(Privileges.directoryOverrideNeeded([base + "/open", base + "/sealed"]))
        #expect(Privileges.directoryOverrideNeeded([base + "/missing"]))
    }
}
