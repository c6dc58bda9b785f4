import Cgroups
import Control
@testable import Daemon
import Glibc
import Plan
import Policy
import Routing
import ServiceSupport
import Testing
import Launch
import Applying

/// vpnd's answers to vpnexec and vpnctl, without root: the request handler with the
/// reconciler over FakeKernelApplier, a fake cgroup tree and fake systemd scopes. The
/// process moved is the test's own, held by a real pidfd (which needs no privilege); where
/// it is, and where it goes, is the fake tree's. The real moves are proven in namespaces
/// (VpnexecTests, MoveTests, SystemdScopeTests...).
@Suite struct RequestHandlerTests {
    typealias PolicyFolder = ReconcilerTests.PolicyFolder
    static let work = "[profile.work]\ntunnel.interface = \"wg0\"\nusers = [4711]\n"
    static let workCgroup = "vpn.slice/vpn-work.slice"
    static let session = "user.slice/user-4711.slice/session-2.scope"
    static let me = getpid()

    /// The daemon's part of the answers, faked: what it was asked, and what it says.
    final class FakeAnswers: RequestAnswering {
        var joined: [String] = []
        var reloads = 0
        var downs = 0
        var holds: [(String, Bool)] = []
        var statusReport: (() throws -> StatusReport)?
        var explained: ((String, Int32?, UInt32) throws -> Explanation)?
        /// The tunnel each profile's launch finds held (none: it gets through).
        var held: [String: HeldTunnel] = [:]
        /// Whether a built-in tunnel runs to be held up or down.
        var running = true

        func status() throws -> StatusReport {
            guard let statusReport else { throw RequestFailure("status: not this test's") }
            return try statusReport()
        }
        func reload() -> ControlResponse { reloads += 1; return ControlResponse(ok: true, message: "reloaded") }
        func down() throws -> ControlResponse { downs += 1; return ControlResponse(ok: true, message: "down") }
        func links() throws -> [Link] { [Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)] }
        func hold(interface: String, up: Bool) -> Bool { holds.append((interface, up)); return running }
        func joined(_ profile: Profile) { joined.append(profile.name) }
        func heldTunnel(_ profile: Profile) -> HeldTunnel? { held[profile.name] }
        func explain(cgroup: String, pid: Int32?, uid: UInt32) throws -> Explanation {
            guard let explained else { throw RequestFailure("this vpnd cannot explain") }
            return try explained(cgroup, pid, uid)
        }
    }

    struct Serving {
        let handler: RequestHandler
        let applier: FakeKernelApplier
        let cgroups: FakeCgroups
        /// Held here: the handler holds its answers unowned, as it holds the daemon.
        let asked: FakeAnswers
    }

    /// A handler over the folder's policy, applied once; the test's process in `cgroup`.
    /// `status`: the daemon's report, made from the policy in force (none: not this test's).
    func makeServing(_ folder: PolicyFolder, ids: [String: UInt64] = [RequestHandlerTests.workCgroup: 101], cgroup: String = RequestHandlerTests.session,
                     status: ((Policy) throws -> StatusReport)? = nil,
                     explain: ((String, Int32?, UInt32) throws -> Explanation)? = nil) throws -> Serving {
        let cgroups = FakeCgroups(ids: ids, facts: RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)]))
        cgroups.processes[Self.me] = cgroup
        let applier = FakeKernelApplier()
        let reconciler = Reconciler(policy: try LoadedPolicy(directory: folder.path, reader: .plain), applier: applier, facts: cgroups, reader: .plain)
        try reconciler.applyPolicy()
        let asked = FakeAnswers()
        if let status { asked.statusReport = { try status(reconciler.policy) } }
        asked.explained = explain
        let handler = RequestHandler(reconciler: reconciler, cgroups: cgroups, policyDirectory: folder.path,
                                     cgroupParent: "vpn.slice", log: Log(minimum: .error), answers: asked)
        handler.systemdManagesCgroups = true
        return Serving(handler: handler, applier: applier, cgroups: cgroups, asked: asked)
    }

    /// The test's own process, as the kernel would name a caller of uid `uid`.
    func caller(uid: UInt32) throws -> Peer {
        Peer(pid: Self.me, uid: uid, gid: uid, groups: [uid], process: try ProcessHandle.open(pid: Self.me), unidentified: nil)
    }

    @Test func aLaunchIntoAProfileTheUserMayNotUseIsRefusedNamingTheRule() throws {
        let folder = try PolicyFolder(Self.work)
        let serving = try makeServing(folder)
        let answer = serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4712))
        #expect(!answer.ok)
        #expect(answer.text.contains("may not use profile \"work\": the rule at \(folder.path)/10-test.toml:3"), "\(answer.text)")
        #expect(answer.text.contains("allows user 4711"), "\(answer.text)")
        #expect(serving.cgroups.moves.isEmpty && serving.asked.joined.isEmpty)
        #expect(serving.applier.applied.count == 1, "nothing applied for a refusal")
    }

    /// A user's typo is answered from the profiles it may use, as its status shows them:
    /// the nearest of those, else their names; root's from every profile (issue 43, item 6).
    @Test func anUnknownProfileNamesOnlyTheProfilesTheCallerMayUse() throws {
        let folder = try PolicyFolder(Self.work + "[profile.home]\ntunnel.interface = \"wg0\"\nusers = [4712]\n"
                                      + "[profile.secret]\ntunnel.interface = \"wg0\"\nusers = [4712]\n")
        let serving = try makeServing(folder)
        let user = try caller(uid: 4711), root = try caller(uid: 0)
        func said(_ request: ControlRequest, by peer: Peer) -> String {
            let answer = serving.handler.handle(request, from: peer)
            #expect(!answer.ok)
            return answer.text
        }
        #expect(said(.exec(profile: "wrok"), by: user) == "unknown profile \"wrok\" (did you mean \"work\"?)")
        #expect(said(.exec(profile: "Work"), by: user) == "unknown profile \"Work\" (did you mean \"work\"?)", "names are exact, suggestions not")
        #expect(said(.exec(profile: "hom"), by: user) == "unknown profile \"hom\" (profiles you may use: work)", "nothing of home, which 4711 may not use")
        #expect(said(.members(profile: "secert"), by: user) == "unknown profile \"secert\" (profiles you may use: work)")
        #expect(said(.exec(profile: "hom"), by: root) == "unknown profile \"hom\" (did you mean \"home\"?)")
        #expect(said(.exec(profile: "play"), by: root) == "unknown profile \"play\" (profiles: work, home, secret)")
        let nobody = try caller(uid: 4999)
        #expect(said(.exec(profile: "work2"), by: nobody) == "unknown profile \"work2\" (you may use none)", "not even the nearest: \(folder.path) stays unsaid")
        #expect(serving.cgroups.moves.isEmpty)
    }

    @Test func aLaunchMovesTheCallerOnlyOnceTheMapsKnowItsCgroup() throws {
        // The profile's cgroup was made again by someone (a new id) since the last apply.
        let serving = try makeServing(try PolicyFolder(Self.work))
        serving.cgroups.ids[Self.workCgroup] = 202
        var appliedAtMove: UInt64?
        serving.cgroups.onMove = { _, _ in appliedAtMove = serving.handler.reconciler.appliedFacts?.cgroupIDs[Self.workCgroup] }
        let answer = serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4711))
        #expect(answer.ok && answer.text == "pid \(Self.me) is in profile work", "\(answer.text)")
        #expect(answer.launch == LaunchReport(cgroups: [Self.workCgroup]), "where vpnexec looks for a browser outside the profile")
        #expect(serving.cgroups.moves.map(\.path) == [Self.workCgroup])
        #expect(appliedAtMove == 202, "the new id was applied before the move")
        #expect(serving.applier.applied.count == 2, "one apply for the new id, none after the move")
        #expect(serving.applier.current == Planner.plan(serving.handler.reconciler.policy, facts: try serving.cgroups.facts(for: serving.handler.reconciler.policy, tunnelFiles: [:])))
        #expect(serving.asked.joined == ["work"])
    }

    @Test func aUserMayNotTakeAProcessOutOfASystemUnit() throws {
        let serving = try makeServing(try PolicyFolder(Self.work), cgroup: "system.slice/cron.service")
        let answer = serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4711))
        #expect(!answer.ok)
        #expect(answer.text.contains("may not move pid \(Self.me) out of system.slice/cron.service: a user may move only processes of its own session"), "\(answer.text)")
        #expect(serving.cgroups.moves.isEmpty)
    }

    @Test func aMoveOfAnotherUsersProcessIsRefused() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let answer = serving.handler.handle(.move(profile: "work", pid: Self.me), from: try caller(uid: 4711))
        #expect(!answer.ok && answer.text.contains("process \(Self.me) belongs to uid \(getuid()); ") && answer.text.hasSuffix(" may only move its own processes"), "\(answer.text)")
        #expect(serving.cgroups.moves.isEmpty)
    }

    @Test func bypassNeedsTheRuleAndASlice() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let user = serving.handler.handle(.bypass, from: try caller(uid: 4711))
        #expect(!user.ok && user.text.contains("may not start commands outside the profiles: no policy file sets [system] bypass.users or bypass.groups, so only root may"), "\(user.text)")
        let root = serving.handler.handle(.bypass, from: try caller(uid: 0))
        #expect(!root.ok && root.text.hasPrefix("this policy has no bypass slice"), "\(root.text)")
        #expect(serving.cgroups.moves.isEmpty)
    }

    @Test func reloadAndDownAreRootsAndAnUnnamedCallerNobodys() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let user = try caller(uid: 4711)
        #expect(serving.handler.handle(.reload, from: user).text == "only root may reload the policy (you are \(user.userName))")
        #expect(serving.handler.handle(.down, from: user).text == "only root may take vpnexec down (you are \(user.userName))")
        #expect(serving.asked.reloads == 0 && serving.asked.downs == 0)
        #expect(serving.handler.handle(.reload, from: try caller(uid: 0)).ok && serving.asked.reloads == 1)
        #expect(serving.handler.handle(.status, from: nil).text == "cannot identify the caller")
        let unnamed = Peer(pid: Self.me, uid: 4711, gid: 4711, groups: [4711], process: nil, unidentified: "the process that connected has exited")
        #expect(serving.handler.handle(.exec(profile: "work"), from: unnamed).text == "refused: the process that connected has exited")
        #expect(serving.cgroups.moves.isEmpty)
    }

    @Test func aUserListsTheProfilesItMayUseAndTheirMembers() throws {
        let folder = try PolicyFolder(Self.work + "[profile.home]\ntunnel.interface = \"tun0\"\nusers = [4712]\n")
        // The test's process is in a unit's slice that joined work where it stands.
        let unit = "user.slice/user-4711.slice/user@4711.service/app.slice/vpn-work.slice"
        let serving = try makeServing(folder, ids: [Self.workCgroup: 101, "vpn.slice/vpn-home.slice": 102], cgroup: unit)
        serving.cgroups.facts.joinedCgroups[unit] = RuntimeFacts.JoinedCgroup(profile: "work", id: 555)
        try serving.handler.reconciler.applyPolicy()
        let user = try caller(uid: 4711)
        let listed = try #require(serving.handler.handle(.profiles, from: user).profiles)
        #expect(listed.map(\.name) == ["work"], "only what the policy lets it use")
        #expect(listed.first?.state == "up" && listed.first?.members == 1)
        let all = try #require(serving.handler.handle(.profiles, from: try caller(uid: 0)).profiles)
        #expect(all.map(\.name) == ["work", "home"] && all.last?.state == "missing" && all.last?.members == 0)
        let members = try #require(serving.handler.handle(.members(profile: "work"), from: user).members)
        #expect(members.map(\.pid) == [Self.me] && members.first?.uid == getuid() && members.first?.profile == "work")
        #expect(serving.handler.handle(.members(profile: nil), from: user).members?.map(\.pid) == [Self.me])
        let refused = serving.handler.handle(.members(profile: "home"), from: user)
        #expect(!refused.ok && refused.text.contains("may not use profile \"home\": the rule at \(folder.path)/10-test.toml:6"), "\(refused.text)")
    }

    @Test func aUsersStatusHasTheProfilesItMayUseAndNothingHostWide() throws {
        let folder = try PolicyFolder(Self.work + "[profile.home]\ntunnel.interface = \"tun0\"\nusers = [4712]\n")
        let serving = try makeServing(folder, ids: [Self.workCgroup: 101, "vpn.slice/vpn-home.slice": 102]) { policy in
            let builder = StatusBuilder(policy: policy, cgroupParent: "vpn.slice", counters: [:], links: [], addresses: [])
            let parts = StatusBuilder.Parts(version: "1.2.3", pid: 42, policyDirectory: folder.path, cgroupRoot: "/sys/fs/cgroup",
                                            refusedConnections: 1, learnedRoutesPutBack: 2,
                                            sandbox: SandboxStatus(state: SandboxStatus.confined, landlockABI: 4, writablePaths: ["/sys/fs/cgroup"]),
                                            lastReload: .started(at: 1_700_000_000), bypassMoves: 3, bypassRefused: 4)
            return builder.report(parts) { _ in StatusBuilder.ProfileParts() }
        }
        let root = try #require(serving.handler.handle(.status, from: try caller(uid: 0)).status)
        #expect(root.profiles.map(\.name) == ["work", "home"] && root.policyDirectory == folder.path && root.sandbox != nil)
        #expect(root.bypassMoves == 3 && root.lastReload != nil && root.droppedStaleMarks != nil)

        let user = try #require(serving.handler.handle(.status, from: try caller(uid: 4711)).status)
        #expect(user.profiles.map(\.name) == ["work"], "only what the policy lets it use")
        #expect(user.profiles.first == root.profiles.first, "and all of it")
        #expect(user.policyDirectory == nil && user.cgroupRoot == nil && user.sandbox == nil && user.lastReload == nil && user.dnsSteering == nil)
        #expect(user.bypassMoves == nil && user.bypassRefused == nil && user.bypassed == nil && user.refusedConnections == nil
                && user.learnedRoutesPutBack == nil && user.unknownCgroupRefusals == nil && user.droppedHeld == nil
                && user.droppedStaleMarks == nil && user.socketProgramsPutBack == nil && user.executableRules == nil)
        #expect(user.version == "1.2.3" && user.daemonPID == 42)
        let json = String(decoding: ControlCoding.encode(user), as: UTF8.self)
        #expect(!json.contains(folder.path) && !json.contains("home") && !json.contains("/sys/fs/cgroup"), "\(json)")

        let nobody = try #require(serving.handler.handle(.status, from: try caller(uid: 65534)).status)
        #expect(nobody.profiles.isEmpty && nobody.policyDirectory == nil)
    }

    @Test func upAndDownAreForBuiltInTunnels() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let answer = serving.handler.handle(.tunnelUp(profile: "work"), from: try caller(uid: 4711))
        #expect(!answer.ok && answer.text.hasPrefix("profile work uses interface wg0, which vpnd does not own"), "\(answer.text)")
        #expect(serving.asked.holds.isEmpty)
    }

    @Test func systemdsScopeOrTheCgroupMoveWhenItRefuses() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let scopes = FakeScopes()
        serving.handler.scopes = scopes
        scopes.run = { unit, pid in
            serving.cgroups.processes[pid] = Self.workCgroup + "/" + unit
            return nil
        }
        var answers: [ControlResponse] = []
        serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4711)) { answers.append($0) }
        #expect(answers.map(\.text) == ["pid \(Self.me) is in profile work"])
        #expect(scopes.started.map(\.unit) == ["vpnexec-work-\(Self.me).scope"] && scopes.started.map(\.slice) == ["vpn-work.slice"])
        #expect(serving.cgroups.moves.isEmpty, "systemd placed it")

        serving.cgroups.processes[Self.me] = Self.session
        scopes.run = { _, _ in "systemd refused the scope: access denied" }
        serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4711)) { answers.append($0) }
        #expect(answers.last?.ok == true)
        #expect(serving.cgroups.moves.map(\.path) == [Self.workCgroup], "moved by vpnd instead")
        #expect(serving.asked.joined == ["work", "work"])
    }

    @Test func moveOutGoesWhereTheSessionWouldHaveIt() throws {
        let home = "user.slice/user-\(getuid()).slice/session-3.scope"
        let serving = try makeServing(try PolicyFolder(Self.work), ids: [Self.workCgroup: 101, home: 303], cgroup: Self.workCgroup)
        serving.handler.sessionID = { _ in 3 }
        let root = try caller(uid: 0)
        let answer = serving.handler.handle(.moveOut(pid: Self.me), from: root)
        #expect(answer.ok && answer.text.hasPrefix("pid \(Self.me) moved out of profile work into \(home);"), "\(answer.text)")
        #expect(serving.cgroups.moves.map(\.path) == [home])
        serving.handler.sessionID = { _ in nil }
        serving.cgroups.processes[Self.me] = Self.workCgroup
        let lost = serving.handler.handle(.moveOut(pid: Self.me), from: root)
        #expect(!lost.ok && lost.text.contains("belongs to no live login session"), "\(lost.text)")
        serving.cgroups.processes[Self.me] = home
        let outside = serving.handler.handle(.moveOut(pid: Self.me), from: root)
        #expect(outside.text == "pid \(Self.me) is in no profile's cgroup (it is in \(home))")
    }
}

/// What only the daemon knows is asked of its answers (RequestAnswering): the handler's
/// part is who may ask, and what the answer is put into.
extension RequestHandlerTests {
    @Test func statusReloadDownAndJoinsGoToTheAnswers() throws {
        let serving = try makeServing(try PolicyFolder(Self.work)) { policy in
            StatusBuilder(policy: policy, cgroupParent: "vpn.slice", counters: [:], links: [], addresses: []).report(
                StatusBuilder.Parts(version: "9.9.9", pid: 7, policyDirectory: "/p", cgroupRoot: "/c", refusedConnections: 0, learnedRoutesPutBack: 0,
                                    sandbox: SandboxStatus(state: SandboxStatus.off), lastReload: nil, bypassMoves: 0, bypassRefused: 0)) { _ in StatusBuilder.ProfileParts() }
        }
        let root = try caller(uid: 0)
        #expect(serving.handler.handle(.status, from: root).status?.version == "9.9.9", "the answers' report")
        #expect(serving.handler.handle(.reload, from: root).text == "reloaded" && serving.asked.reloads == 1)
        #expect(serving.handler.handle(.down, from: root).text == "down" && serving.asked.downs == 1)
        #expect(serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4711)).ok)
        #expect(serving.asked.joined == ["work"], "the launch's profile told, for its on-demand tunnel")
        #expect(serving.asked.reloads == 1 && serving.asked.downs == 1 && serving.asked.holds.isEmpty)
    }

    /// vpnexec warns of a held tunnel (LaunchWarnings): the launch itself is placed.
    @Test func aLaunchIntoAProfileWhoseTunnelIsHeldIsPlacedAndSaysSo() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let held = HeldTunnel(interface: "wg0", state: HeldTunnel.missing)
        serving.asked.held["work"] = held
        let answer = serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4711))
        #expect(answer.ok && answer.launch == LaunchReport(cgroups: [Self.workCgroup], heldTunnel: held), "\(answer)")
        #expect(serving.cgroups.moves.map(\.path) == [Self.workCgroup] && serving.asked.joined == ["work"])
        serving.asked.held = [:]
        #expect(serving.handler.handle(.exec(profile: "work"), from: try caller(uid: 4711)).launch?.heldTunnel == nil)
    }
}

extension ControlResponse {
    /// The message, "" when there is none.
    var text: String { message ?? "" }
}

/// `vpnctl explain`: a user asks about its own processes and the profiles it may use.
extension RequestHandlerTests {
    @Test func explainingAnotherUsersProcessIsRefused() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let answer = serving.handler.handle(.explain(pid: Self.me, profile: nil), from: try caller(uid: 4711))
        #expect(!answer.ok)
        #expect(answer.message?.contains("may explain only its own processes") == true)
    }

    @Test func explainingAProfileTheUserMayNotUseIsRefusedNamingTheRule() throws {
        let serving = try makeServing(try PolicyFolder(Self.work))
        let answer = serving.handler.handle(.explain(pid: nil, profile: "work"), from: try caller(uid: 4712))
        #expect(!answer.ok)
        #expect(answer.message?.contains("may not use profile \"work\"") == true)
    }

    /// Root's, and a user's for its own process: the daemon is asked about the process's
    /// cgroup as /proc has it, with its owner's uid (its route is looked up as that user's);
    /// a profile's with the caller's uid.
    @Test func explainAsksAboutTheProcessesCgroupWithItsOwnersUID() throws {
        var asked: [(String, Int32?, UInt32)] = []
        let serving = try makeServing(try PolicyFolder(Self.work), explain: { cgroup, pid, uid in
            asked.append((cgroup, pid, uid))
            return Explanation(pid: pid, cgroup: cgroup, placement: Explanation.outside, rule: "-", dns: ExplainedDNS(port53: ExplainedDNS.host))
        })
        let mine = serving.handler.handle(.explain(pid: Self.me, profile: nil), from: try caller(uid: 0))
        #expect(mine.ok && mine.explanation?.cgroup == CgroupHierarchy.cgroup(ofProcess: Self.me) && mine.explanation?.command?.isEmpty == false, "\(mine)")
        let profile = serving.handler.handle(.explain(pid: nil, profile: "work"), from: try caller(uid: 4711))
        #expect(profile.ok && profile.explanation?.cgroup == Self.workCgroup, "\(profile)")
        #expect(asked.map(\.1) == [Self.me, nil] && asked.map(\.2) == [getuid(), 4711])
        let both = serving.handler.handle(.explain(pid: Self.me, profile: "work"), from: try caller(uid: 0))
        #expect(!both.ok)
    }
}
