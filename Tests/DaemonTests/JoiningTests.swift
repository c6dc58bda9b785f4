import Cgroups
@testable import Daemon
import ExecRules
import Facts
import Foundation
import Glibc
import Nftables
import Plan
import Policy
import Routing
import ServiceSupport
import Testing
import TunnelFiles
import Applying

/// A process or a unit joining a profile, without root: what an exec of a listed program
/// decides (ExecPlacement) and applies through the reconciler over FakeKernelApplier before
/// the move; a unit's or app scope's cgroup appearing in a cgroup tree made of plain
/// directories, read by vpnd's own FactsReader, becomes the map element the plan asks the
/// applier for. The real moves and units are proven in namespaces (ExecutableRulesTests,
/// UnitCgroupTests).
@Suite struct JoiningTests {
    typealias PolicyFolder = ReconcilerTests.PolicyFolder
    static let parent = "vpn.slice"
    static let workCgroup = "vpn.slice/vpn-work.slice"
    static let bypassCgroup = ExecutableRules.bypassCgroup(parent: parent)
    static let session = "user.slice/user-4711.slice/session-2.scope"
    static let exec = "[profile.work]\ntunnel.interface = \"wg0\"\nroute.executables = [\"/usr/bin/curl\"]\nbypass.executables = [\"/usr/bin/ssh\"]\n"

    @Test func anExecDecidesItsCgroupFromTheListedNames() throws {
        let folder = try PolicyFolder(Self.exec)
        let policy = try LoadedPolicy(directory: folder.path, reader: .plain).policy
        func placement(_ names: [String], from cgroup: String, by user: Credentials = Credentials(uid: 0, groups: [0])) -> ExecPlacement? {
            ExecPlacement.of(names: names, cgroup: cgroup, policy: policy, parent: Self.parent, user: { user })
        }
        #expect(placement(["/usr/bin/curl"], from: Self.session) == ExecPlacement(target: Self.workCgroup, label: "work"))
        #expect(placement(["/usr/local/bin/fetch", "/usr/bin/curl"], from: Self.session)?.label == "work", "a hard link of a listed program")
        #expect(placement(["/usr/bin/curl"], from: Self.workCgroup + "/vpnd-placed") == nil, "already in")
        #expect(placement(["/usr/bin/ssh"], from: Self.workCgroup) == ExecPlacement(target: Self.bypassCgroup, label: "bypass"))
        #expect(placement(["/usr/bin/ssh"], from: Self.workCgroup, by: Credentials(uid: 4711, groups: [4711])) == nil,
                "a user who may not bypass (no [system] bypass: only root may) stays in the profile")
        #expect(placement(["/usr/bin/curl"], from: Self.session, by: Credentials(uid: 4711, groups: [4711])) == ExecPlacement(target: Self.workCgroup, label: "work"),
                "a route rule is everyone's")
        #expect(placement(["/usr/bin/ssh"], from: Self.session) == nil, "outside the profile a bypass is where it is")
        #expect(placement(["/usr/bin/wget"], from: Self.session) == nil)
    }

    @Test func aPlacementAppliesItsCgroupsNewIDBeforeTheMove() throws {
        let folder = try PolicyFolder(Self.exec)
        let cgroups = FakeCgroups(ids: [Self.workCgroup: 101])
        let applier = FakeKernelApplier()
        let reconciler = Reconciler(policy: try LoadedPolicy(directory: folder.path, reader: .plain), applier: applier, facts: cgroups, reader: .plain)
        var made: UInt64 = 900
        // As vpnd's prepare step: the cgroups it keeps are made when missing.
        let steps = ClosureSteps()
        reconciler.steps = steps
        steps.onPrepare = { policy in
            for path in Planner.cgroups(policy, parent: Self.parent) where cgroups.ids[path] == nil {
                made += 1
                cgroups.ids[path] = made
            }
        }
        try reconciler.applyPolicy()
        #expect(cgroups.ids[Self.bypassCgroup] == 901 && applier.applied.count == 1)
        // Someone removes the bypass slice; a member of work then runs ssh.
        cgroups.ids[Self.bypassCgroup] = nil
        let me = getpid()
        cgroups.processes[me] = Self.workCgroup
        let placement = try #require(ExecPlacement.of(names: ["/usr/bin/ssh"], cgroup: Self.workCgroup, policy: reconciler.policy, parent: Self.parent,
                                                      user: { Credentials(uid: 0, groups: [0]) }))
        var elementsAtMove: [NftElement] = []
        cgroups.onMove = { _, _ in elementsAtMove = applier.current.map(Self.cgroupElements) ?? [] }
        let placed = try placement.apply(to: try ProcessHandle.open(pid: me), cgroups: cgroups) { _ in
            try reconciler.prepareMove(cgroups: cgroups, parent: Self.parent)
        }
        #expect(placed == Self.bypassCgroup && cgroups.processes[me] == Self.bypassCgroup)
        #expect(applier.applied.count == 2, "one apply, before the move")
        #expect(elementsAtMove.contains { $0.key == .cgroup(id: 902, path: Self.bypassCgroup) }, "the new slice's id was in the maps: \(elementsAtMove)")
        #expect(!elementsAtMove.contains { $0.key == .cgroup(id: 901, path: Self.bypassCgroup) })
        // Nothing changed since: the next placement applies nothing.
        _ = try placement.apply(to: try ProcessHandle.open(pid: me), cgroups: cgroups) { _ in
            try reconciler.prepareMove(cgroups: cgroups, parent: Self.parent)
        }
        #expect(applier.applied.count == 2)
    }

    /// Every cgroup element of the table's sets and maps.
    static func cgroupElements(_ state: DesiredState) -> [NftElement] {
        state.nft.sets.flatMap(\.elements).filter { if case .cgroup = $0.key { true } else { false } }
    }

    /// The cgroup elements of cgroups below `prefix`.
    static func elements(of prefix: String, in state: DesiredState) -> [NftElement] {
        cgroupElements(state).filter { if case let .cgroup(_, path) = $0.key { path.hasPrefix(prefix) } else { false } }
    }

    /// FactsReader over a tree of plain directories: ids are their inodes, as cgroupfs's are.
    final class DirectoryTree: RuntimeFactsSource {
        let root: String
        let hierarchy: CgroupHierarchy
        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("vx-tree-\(UUID().uuidString)").path
            hierarchy = CgroupHierarchy(mountPoint: root)
            for path in ["vpn.slice/vpn-work.slice", "system.slice", "user.slice"] { try make(path) }
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }
        func make(_ path: String) throws {
            try FileManager.default.createDirectory(atPath: hierarchy.absolute(path), withIntermediateDirectories: true)
        }
        func facts(for policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) throws -> RuntimeFacts {
            let reader = FactsReader(hierarchy: hierarchy, links: { [Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)] },
                                     addresses: { [] })
            return try reader.read(policy, cgroupParent: JoiningTests.parent, groups: { _ in [] })
        }
    }

    @Test func anAppScopeAppearingJoinsItsProfileAsAMapElement() throws {
        let folder = try PolicyFolder("[profile.work]\ntunnel.interface = \"wg0\"\nusers = [4711]\napps = [\"org.mozilla.firefox\"]\n")
        let tree = try DirectoryTree()
        let applier = FakeKernelApplier()
        let reconciler = Reconciler(policy: try LoadedPolicy(directory: folder.path, reader: .plain), applier: applier, facts: tree, reader: .plain)
        try reconciler.applyPolicy()
        #expect(Self.elements(of: "user.slice/", in: try #require(applier.current)).isEmpty)

        let scope = "user.slice/user-4711.slice/user@4711.service/app.slice/app-gnome-org.mozilla.firefox-4242.scope"
        let stranger = "user.slice/user-4712.slice/user@4712.service/app.slice/app-gnome-org.mozilla.firefox-77.scope"
        try tree.make(scope)
        try tree.make(stranger)
        try reconciler.applyPolicy()
        let id = try #require(tree.hierarchy.id(of: scope))
        let joined = Self.cgroupElements(try #require(applier.current)).filter { $0.key == .cgroup(id: id, path: scope) }
        #expect(joined.map(\.verdict) == [.jump("listen_work")], "\(joined)")
        #expect(applier.current?.socketPrograms.first { $0.cgroup == scope }?.settings.mark == 0x0100_0000,
                "its sockets are born with the profile's mark, its DNS goes to the profile's proxy")
        #expect(Self.elements(of: "user.slice/", in: applier.current!).map(\.key) == joined.map(\.key), "the stranger's scope does not join")
        let refusal = try #require(reconciler.appliedFacts?.refusedCgroups[stranger])
        #expect(refusal.hasPrefix("uid 4712 may not use profile \"work\": the rule at \(folder.path)/10-test.toml:3"), "\(refusal)")

        // The app ends: its scope goes, and so does its element.
        try FileManager.default.removeItem(atPath: tree.hierarchy.absolute(scope))
        try reconciler.applyPolicy()
        #expect(Self.elements(of: "user.slice/", in: applier.current!).isEmpty)
        #expect(!(applier.current?.socketPrograms.contains { $0.cgroup == scope } ?? true))
    }
}
