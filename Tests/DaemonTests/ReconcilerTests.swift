import Addresses
@testable import Daemon
import Descriptors
import Foundation
import Nftables
import Plan
import Policy
import Routing
import Testing
import Applying

/// The daemon's decisions, without root: the reconciler against a fake applier that records
/// the desired states it was asked for, and facts a test sets. The real applier is proven
/// against the kernel by the namespace tests (DaemonBehaviourTests, ControlPlaneTests...).
@Suite struct ReconcilerTests {
    static let work = "[profile.work]\ntunnel.interface = \"wg0\"\n"
    static let home = "[profile.home]\ntunnel.interface = \"tun0\"\n"
    static let homeMAC = "02:00:5e:00:53:0a"

    /// A policy directory of its own, removed when the test ends.
    final class PolicyFolder {
        let path: String
        init(_ text: String) throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("vx-reconciler-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try write(text)
        }
        func write(_ text: String) throws {
            try text.write(toFile: path + "/10-test.toml", atomically: true, encoding: .utf8)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    static let facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-home.slice": 102],
                                    links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420),
                                            "tun0": Link(index: 8, name: "tun0", isUp: true, isRunning: true, mtu: 1500)])

    /// A reconciler in force with the folder's policy: applied once.
    func running(_ folder: PolicyFolder, facts: FakeFactsSource = FakeFactsSource(facts)) throws -> (Reconciler, FakeKernelApplier, FakeFactsSource) {
        let applier = FakeKernelApplier()
        let reconciler = Reconciler(policy: try LoadedPolicy(directory: folder.path, reader: .plain), applier: applier, facts: facts, reader: .plain)
        try reconciler.applyPolicy()
        #expect(applier.applied.count == 1)
        return (reconciler, applier, facts)
    }

    /// Programs the kernel refused (the fake's `unguardedCgroups`, as the attacher reports
    /// them after an apply): a second apply at once holds the cgroup, and nobody is placed
    /// there; once they are in, the hold goes at the next pass.
    @Test func aCgroupWithoutItsProgramsIsHeldAtOnceAndRefused() throws {
        let folder = try PolicyFolder(Self.work)
        let source = FakeFactsSource(Self.facts)
        let applier = FakeKernelApplier()
        source.applier = applier
        let reconciler = Reconciler(policy: try LoadedPolicy(directory: folder.path, reader: .plain), applier: applier, facts: source, reader: .plain)
        applier.refusedPrograms = ["vpn.slice/vpn-work.slice": UnguardedCgroup(id: 101, missing: [.socketCreate, .egress], reason: "bpf: attaching vx_create to vpn.slice/vpn-work.slice: Operation not permitted")]
        try reconciler.applyPolicy()
        #expect(applier.applied.count == 2, "the apply that found it, and the one that holds it")
        #expect(applier.current?.nft.set(named: "unguarded_level_2")?.elements.map(\.key) == [.cgroup(id: 101, path: "vpn.slice/vpn-work.slice")])
        #expect(reconciler.appliedFacts?.unguardedCgroups == ["vpn.slice/vpn-work.slice": 101])
        try reconciler.applyPolicy()
        #expect(applier.applied.count == 3 && applier.applied[2] == applier.applied[1], "held already: one apply, the same state")
        #expect(throws: RequestFailure.self, "nobody is placed there") { try reconciler.checkGuarded("vpn.slice/vpn-work.slice/vpnd-placed") }
        do { try reconciler.checkGuarded("vpn.slice/vpn-work.slice") } catch {
            #expect("\(error)".contains("profile work is held") && "\(error)".contains("vx_create, vx_egress") && "\(error)".contains("Operation not permitted"), "\(error)")
        }
        try reconciler.checkGuarded("vpn.slice/vpn-home.slice")

        applier.refusedPrograms = [:]
        try reconciler.applyPolicy()
        #expect(applier.current?.nft.chain(named: "unguarded") == nil, "the hold goes once the programs are in")
        try reconciler.checkGuarded("vpn.slice/vpn-work.slice")
    }

    @Test func aMalformedReloadChangesNothing() throws {
        let folder = try PolicyFolder(Self.work)
        let (reconciler, applier, _) = try running(folder)
        let before = reconciler.policy
        try folder.write(Self.work + "kilswitch = true\n" + Self.home)
        guard case let .refused(error) = reconciler.reload(from: folder.path, check: { _ in }) else {
            Issue.record("a malformed policy was not refused")
            return
        }
        #expect("\(error)".contains("10-test.toml:3"), "the refusal says where: \(error)")
        #expect(applier.applied.count == 1, "nothing applied")
        #expect(reconciler.policy == before)
        #expect(reconciler.sources.map(\.text) == [Self.work])
    }

    @Test func aRefusalOfTheCheckChangesNothing() throws {
        let folder = try PolicyFolder(Self.work)
        let (reconciler, applier, _) = try running(folder)
        try folder.write(Self.work + Self.home)
        guard case .refused = reconciler.reload(from: folder.path, check: { _ in throw ApplyError.kernelLacks(operation: "fanotify_init", feature: "fanotify") }) else {
            Issue.record("the check's refusal was not a refusal")
            return
        }
        #expect(applier.applied.count == 1 && reconciler.policy.profiles.map(\.name) == ["work"])
    }

    @Test func aGoodReloadAppliesTheNewPlanOnce() throws {
        let folder = try PolicyFolder(Self.work)
        let (reconciler, applier, source) = try running(folder)
        try folder.write(Self.work + Self.home)
        guard case let .applied(previous) = reconciler.reload(from: folder.path, check: { _ in }) else {
            Issue.record("a good policy did not apply")
            return
        }
        #expect(previous.profiles.map(\.name) == ["work"])
        #expect(reconciler.policy.profiles.map(\.name) == ["work", "home"])
        #expect(applier.applied.count == 2, "one apply for the reload")
        #expect(applier.applied.last == Planner.plan(reconciler.policy, facts: source.facts))
        #expect(applier.applied.last?.nft.chain(named: "egress_home") != nil)
        #expect(reconciler.sources.map(\.text) == [Self.work + Self.home])
    }

    @Test func thePlanShownIsThePlanAReloadApplies() throws {
        let folder = try PolicyFolder(Self.work)
        let (reconciler, applier, _) = try running(folder)
        try folder.write(Self.work + Self.home)
        let shown = try reconciler.preview(from: folder.path)
        #expect(applier.applied.count == 1, "showing applies nothing")
        #expect(reconciler.policy.profiles.map(\.name) == ["work"], "nor puts the policy in force")
        guard case .applied = reconciler.reload(from: folder.path, check: { _ in }) else {
            Issue.record("the reload did not apply")
            return
        }
        #expect(applier.applied.last == shown.state)
        #expect(reconciler.appliedFacts == shown.facts)
    }

    @Test func aCgroupJoiningAppliesOnePlanWithItsElement() throws {
        let folder = try PolicyFolder(Self.work)
        let (reconciler, applier, source) = try running(folder)
        let unit = "user.slice/user-1000.slice/user@1000.service/app.slice/vpn-work.slice"
        source.facts.joinedCgroups[unit] = RuntimeFacts.JoinedCgroup(profile: "work", id: 555)
        try reconciler.applyPolicy()
        #expect(applier.applied.count == 2, "exactly one plan")
        let (before, after) = (applier.applied[0], applier.applied[1])
        #expect(after == Planner.plan(reconciler.policy, facts: source.facts))
        #expect(reconciler.appliedFacts?.joinedCgroups[unit]?.id == 555)
        // Only an element differs: the real applier adds it, no table rebuild.
        let edits = try #require(KernelApplier.elementEdits(from: before.nft, to: after.nft))
        #expect(edits.removed.isEmpty)
        // The unit's cgroup in the map of listeners; its sockets' mark and DNS are its programs'.
        let added = edits.added.flatMap(\.1)
        #expect(added.allSatisfy { $0.key == .cgroup(id: 555, path: unit) })
        #expect(added.map(\.verdict) == [.jump("listen_work")])
        #expect(after.socketPrograms.map(\.cgroup).contains(unit) && !before.socketPrograms.map(\.cgroup).contains(unit))
    }

    @Test func aFailedApplyRestoresAndReappliesThePreviousPolicy() throws {
        let folder = try PolicyFolder(Self.work)
        let (reconciler, applier, _) = try running(folder)
        try folder.write(Self.work + Self.home)
        applier.failNextApply = SystemError("nft: replacing the table", code: EPERM)
        guard case let .failed(error) = reconciler.reload(from: folder.path, check: { _ in }) else {
            Issue.record("a failed apply was not reported")
            return
        }
        #expect("\(error)" == "nft: replacing the table: Operation not permitted")
        #expect(applier.applied.count == 3, "the first, the new one that failed, the first again")
        #expect(applier.applied[1].nft.chain(named: "egress_home") != nil)
        #expect(applier.applied[2] == applier.applied[0])
        #expect(applier.current == applier.applied[0])
        #expect(reconciler.policy.profiles.map(\.name) == ["work"])
        #expect(reconciler.sources.map(\.text) == [Self.work], "the kept files are the policy in force")
        #expect(reconciler.appliedFacts != nil)
    }

    @Test func aTrustedVerdictFlipReplans() throws {
        let folder = try PolicyFolder(Self.work + "trusted = [{ gateway_mac = \"\(Self.homeMAC)\", action = \"disconnect\" }]\n")
        let source = FakeFactsSource(Self.facts)
        source.network = NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: "02:00:5e:00:53:0b")
        let (reconciler, applier, _) = try running(folder, facts: source)
        #expect(reconciler.appliedFacts?.trusted["work"]?.action == .connect)
        // Home: the profile steps aside.
        source.network.gatewayMAC = Self.homeMAC
        try reconciler.applyPolicy()
        #expect(applier.applied.count == 2)
        #expect(reconciler.appliedFacts?.trusted["work"]?.action == .disconnect)
        #expect(applier.applied[1] != applier.applied[0])
        var disconnected = Self.facts
        disconnected.trusted["work"] = TrustedVerdict(action: .disconnect, rule: 1)
        #expect(applier.applied[1].nft == Planner.plan(reconciler.policy, facts: disconnected).nft)
        #expect(applier.applied[1].routes == Planner.plan(reconciler.policy, facts: disconnected).routes)
        // Away again: the tunnel's plan is back.
        source.network.gatewayMAC = nil
        try reconciler.applyPolicy()
        #expect(applier.applied[2] == applier.applied[0])
    }

    @Test func builtInTunnelsStartBetweenTwoApplies() throws {
        let folder = try PolicyFolder(Self.work)
        let (reconciler, applier, _) = try running(folder)
        var appliedWhenStarted: [Int] = []
        var passes = 0
        let steps = ClosureSteps()
        reconciler.steps = steps
        steps.onReconcileTunnels = {
            appliedWhenStarted.append(applier.applied.count)
            return true
        }
        steps.onPassEnded = { passes += 1 }
        try reconciler.applyPolicy()
        #expect(appliedWhenStarted == [2], "the killswitch is applied before any tunnel starts")
        #expect(applier.applied.count == 3 && passes == 1)
        // A pass that fails still ends with the daemon's follow-up (transports, demand).
        applier.failNextApply = SystemError("nft: replacing the table", code: EPERM)
        #expect(throws: SystemError.self) { try reconciler.applyPolicy() }
        #expect(passes == 2 && appliedWhenStarted == [2])
        #expect(reconciler.appliedFacts == nil, "no facts are in force after a failed apply")
    }

    @Test func theAppliedPlanIsThePlannersForTheSameFacts() throws {
        let folder = try PolicyFolder("""
            [profile.work]
            tunnel.interface = "wg0"
            allow_lan = true
            route.networks = ["10.20.0.0/16", "fd00:20::/48"]
            [profile.home]
            tunnel.interface = "tun0"
            killswitch = false
            """)
        var facts = Self.facts
        facts.tunnelNetworks["wg0"] = [IPPrefix("10.64.0.0/24")!]
        let source = FakeFactsSource(facts)
        let (reconciler, applier, _) = try running(folder, facts: source)
        #expect(applier.applied == [Planner.plan(reconciler.policy, facts: facts)])
        #expect(source.reads == 1)
    }

    @Test func runTimeElementsAreRecordedAndRead() throws {
        let folder = try PolicyFolder(Self.work)
        let (_, applier, _) = try running(folder)
        let element = NftElement(key: .prefix(IPPrefix("192.0.2.7/32")!), timeout: 300)
        try applier.addRuntimeElements([element], to: "learned4")
        #expect(applier.elementBatches == [["learned4": [element]]])
        #expect(try applier.elements(of: "learned4", ipv4: true) == [element])
        try applier.teardown()
        #expect(applier.current == nil && applier.teardowns == 1)
        #expect { try applier.addRuntimeElements([element], to: "learned4") } throws: {
            if case .noTableApplied = $0 as? ApplyError { true } else { false }
        }
    }
}
