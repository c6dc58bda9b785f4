import Addresses
import CLinux
import Cgroups
import Control
import Descriptors
import CSystemd
import ExecRules
import Facts
import Glibc
import Monotonic
import Names
import Netlink
import Nftables
import Plan
import Policy
import TrustedFiles
import TrustedNetworks
import TunnelFiles
import Routing
import ServiceSupport
import Tunnels
import Applying
import DaemonLoop
import DNSProxies

/// vpnd: loads the policy, makes the kernel match it, and then serves requests and
/// follows the machine (tunnels appearing and going, cgroups re-created) from one
/// single-threaded poll loop. Stopping it leaves the kernel state in place: the
/// killswitch is the kernel's, not the daemon's.
public final class Daemon: PassSteps {
    let options: DaemonOptions
    let log: Log
    let hierarchy: CgroupHierarchy
    let applier: any KernelApplying
    let rtnl: Rtnetlink
    /// The policy in force and the kernel state planned from it.
    let reconciler: Reconciler
    let machineFacts: MachineFacts
    var policy: Policy { reconciler.policy }
    /// The built-in tunnels' files, read with the policy they belong to.
    var tunnelFiles: [String: TunnelFiles.Loaded] { reconciler.tunnelFiles }
    let tunnels: BuiltInTunnels
    let failover: ServerFailover
    var server: ControlServer?
    var loop: EventLoop?
    private let lock: NamespaceLock
    /// The facts the kernel state was last planned from (nil until an apply succeeded).
    var appliedFacts: RuntimeFacts? { reconciler.appliedFacts }
    /// What the sandbox enforces, for status.
    var sandboxStatus = SandboxStatus(state: SandboxStatus.off)
    /// The last reload's outcome and time (the start's, until a reload), for status.
    private(set) var lastReload: ReloadStatus?
    private var lastFollowError: String?
    /// Learned routes someone else deleted and vpnd put back (restoreLearnedRoutes), for status.
    private(set) var learnedRoutesPutBack = 0
    /// bypass.executables and route.executables: fanotify before the exec, exec events after.
    let executables: ExecutableEnforcement
    /// The profiles' DNS proxies (serving once registered on the loop, in `run`).
    let dns: DNSService
    /// Where members' routed UDP DNS queries arrive, for the proxies.
    let dnsSteering: DNSSteeringPoint?
    /// Why there is none (for status).
    let dnsSteeringFailure: String?
    /// Where the profiles' varlink servers listen (nil: members' lookups through resolved
    /// and nscd are not followed, `namesFailure` says why).
    let resolveDirectory: String?
    let namesFailure: String?
    let holderCache = TunnelHolderCache()
    var transportWatch = TransportWatch()
    /// Trusted networks: the host's networks read with the facts, each profile's flip.
    let trusted: TrustedNetworks

    /// Starts (Startup's stages, in their order), then loads and applies the policy. Throws a
    /// PolicyError (nothing was touched) or the error of the first kernel operation that failed.
    public convenience init(options: DaemonOptions, log: Log) throws {
        let programs = try Startup.ProgramsLoaded(options: options, log: log)
        let opened = Startup.SourcesOpened(programs)
        let dropped = try Startup.Dropped(opened)
        let prepared = try Startup.Prepared(dropped)
        try self.init(try Startup.Sandboxed(prepared))
    }

    /// The daemon from a finished start: the first apply, and the policy kept.
    init(_ start: Startup.Sandboxed) throws {
        let prepared = start.prepared, opened = start.prepared.dropped.opened, programs = opened.programs
        (options, log, hierarchy) = (programs.options, programs.log, programs.hierarchy)
        executables = opened.executables
        (dnsSteering, dnsSteeringFailure) = (opened.dnsSteering, opened.dnsSteeringFailure)
        (resolveDirectory, namesFailure) = (opened.resolveDirectory, opened.namesFailure)
        lock = prepared.lock
        applier = prepared.applier
        rtnl = prepared.netlink
        machineFacts = MachineFacts(hierarchy: hierarchy, netlink: prepared.netlink, cgroupParent: options.cgroupParent)
        machineFacts.earlierPlaces = programs.earlierPlaces
        reconciler = Reconciler(policy: prepared.loaded, applier: prepared.applier, facts: machineFacts)
        tunnels = BuiltInTunnels(log: log, uapiDirectory: options.wireguardSocketDirectory)
        failover = ServerFailover(log: log)
        trusted = TrustedNetworks(netlink: prepared.netlink, resolvConf: options.resolvConfPath, log: log)
        dns = DNSService(applier: applier, log: log, steering: dnsSteering, resolveDirectory: resolveDirectory)
        sandboxStatus = start.status
        followMachine()
        try applyPolicy()
        lastReload = .started(at: WallClock.now().secondsSinceEpoch)
        keepLastApplied()
        AppliedMarker(socketPath: options.socketPath).set()
        let shown = policy.profiles.prefix(8).map { " \($0.name)->\($0.tunnel.interfaceName)" }.joined()
        log.info("applied policy from \(options.policyDirectory): \(Plural.count(policy.profiles.count, "profile"))" + shown + (policy.profiles.count > 8 ? " ..." : ""))
    }

    /// Each profile's index as an earlier vpnd's programs hold it: its slice's mark.
    static func indexes(_ adopted: AdoptedSocketPrograms, hierarchy: CgroupHierarchy, parent: String) -> [String: UInt32] {
        var indexes: [String: UInt32] = [:]
        for path in adopted.byCgroup.keys {
            guard path.hasPrefix(parent + "/"), let name = RuntimeFacts.profileName(ofSlice: String(path.dropFirst(parent.count + 1))),
                  let id = hierarchy.id(of: path), let settings = adopted.storage(of: path, id: id)?.settings, settings.mark != 0, settings.mask != 0 else { continue }
            indexes[name] = (settings.mark & settings.mask) >> UInt32(settings.mask.trailingZeroBitCount)
        }
        return indexes
    }

    /// The policy that applied, kept for the boot-time killswitch (KeptPolicy).
    func keepLastApplied() {
        guard let state = options.stateDirectory else { return }
        if let failure = KeptPolicy(directory: state + "/policy.d").keep(reconciler.sources) { log.warning(failure) }
    }

    // MARK: state

    /// What the facts read beyond the kernel's (the transports, networks and resolvers the
    /// parts know), and the daemon as the steps around the reconciler's passes.
    private func followMachine() {
        // Where the profile tunnels' own transports are learned (TransportRules keeps them out).
        machineFacts.transports = TunnelTransportSource(tunnels: tunnels, wireguardDirectory: options.wireguardSocketDirectory,
                                                        holders: holderCache, ask: executables.reader.map { inspector in inspector.answer(to:) })
        machineFacts.network = { [trusted] in trusted.read(now: $0) }
        // vpnd in a network namespace of its own beside the host's /run (as in tests) would
        // read another namespace's links by their indexes: resolvconf's records only then.
        // systemd-resolved keeps its link records in a directory only its user may open (mode
        // 0700): read with CAP_DAC_OVERRIDE where vpnd keeps it permitted, else asked of
        // resolved over D-Bus (ResolvedLinkBus: 250 ms at most per read, on this loop).
        let resolvedBus = ResolvedLinkBus()
        let linkResolvers = LinkResolversReader(byIndex: LinkResolversReader.inNamespace(options.initialNetworkNamespace),
                                                bus: { resolvedBus.servers(link: $0) })
        machineFacts.linkResolvers = { interface, link in
            (try? Privileges.withDirectoryOverride { linkResolvers.read(interface: interface, index: link?.index) }) ?? nil
        }
        machineFacts.unguarded = { [applier] in applier.unguardedCgroups }
        machineFacts.foreignNamespaces = { [applier] in applier.foreignNamespaces() }
        machineFacts.resolveSockets = { [resolveDirectory] policy in
            guard let resolveDirectory else { return [:] }
            return ResolveSocketPath.paths(directory: resolveDirectory, profiles: policy.profiles.map { ($0.name, $0.index) })
        }
        reconciler.steps = self
    }

    /// The profile cgroups made where missing (their ids are facts).
    func prepare(_ policy: Policy) throws { try ensureCgroups() }

    /// After each pass: transports logged, on-demand members and trusted re-looks followed.
    func passEnded() {
        let now = MonotonicInstant.now()
        if let facts = appliedFacts {
            log.log(transportWatch.follow(policy, transports: facts.tunnelTransports, counters: try? applier.counters(), now: now))
            machineFacts.transports?.known = transportWatch.known
        }
        followDemand(now: now)
        followTrusted(now: now)
    }

    func ensureCgroups() throws {
        let missing = Planner.cgroups(policy, parent: options.cgroupParent).filter { hierarchy.id(of: $0) == nil }
        guard !missing.isEmpty else { return }
        try Privileges.withDirectoryOverride {
            for path in missing { try hierarchy.create(path) }
        }
    }

    /// One pass of the reconciler: facts read, planned, applied, tunnels followed.
    func applyPolicy() throws {
        try reconciler.applyPolicy()
    }

    /// The built-in tunnels to run, started or stopped (a built-in tunnel that cannot start
    /// leaves its profile fail-closed); true when there are any.
    func reconcileTunnels() -> Bool {
        guard !tunnelFiles.isEmpty || tunnels.isRunningAny else { return false }
        let files = trusted.tunnelFiles(tunnelFiles)
        let before = MonotonicInstant.now()
        let chosen = failover.chosen(files, policy: policy, looks: tunnels.looks(now: before), now: before)
        tunnels.reconcile(chosen, policy: policy, netlink: rtnl, demand: DemandFollower.settings(policy))
        // Read again: starting tunnels takes a while, and their engines run on the clock.
        let now = MonotonicInstant.now(), wall = WallClock.now()
        failover.probe(tunnels, files: files, now: now, wall: wall)
        tunnels.followNetwork(policy, netlink: rtnl, now: now, wall: wall)
        return true
    }

    /// Members of on-demand profiles, as the cgroups hold them now (after every apply: each
    /// cgroup change, each launch, and once a second), told to their tunnels (DemandFollower).
    func followDemand(_ only: Profile? = nil, now: MonotonicInstant) {
        var members: [String: Int] = [:]
        for profile in DemandFollower.followed(policy, only: only) {
            members[profile.name] = reconciler.memberCgroups(of: profile, parent: options.cgroupParent).reduce(0) { $0 + hierarchy.processes(in: $1).count }
        }
        DemandFollower.follow(policy, only: only, members: members, tunnels: tunnels, now: now)
    }

    /// After each apply: the parts told, and what changed logged.
    func applied(_ facts: RuntimeFacts, before: RuntimeFacts?) {
        trusted.applied(facts: facts, policy: policy, wall: .now())
        // An interface's servers may come after it, or change: the proxy asks the new ones.
        if facts.linkResolvers != before?.linkResolvers { configureDNS() }
        dns.applied(memberCgroups: Dictionary(policy.profiles.map { ($0.name, reconciler.memberCgroups(of: $0, parent: options.cgroupParent)) }, uniquingKeysWith: { a, _ in a }))
        executables.applied(facts: facts)
        log.log(AppliedChanges.lines(facts, before: before))
    }

    func reload() -> ControlResponse {
        let outcome = reconciler.reload(from: options.policyDirectory, check: executables.checkEnforceable)
        // The reload's clock, read once its outcome is known.
        let now = MonotonicInstant.now(), wall = WallClock.now()
        let previous: Policy
        switch outcome {
        case let .refused(error):
            lastReload = lastReload?.after(ReloadStatus.refused, at: wall.secondsSinceEpoch)
            log.error("reload refused, running state unchanged:\n\(error)")
            return .failure("policy not reloaded, the running state is unchanged:\n\(error)")
        case let .failed(error):
            lastReload = lastReload?.after(ReloadStatus.failed, at: wall.secondsSinceEpoch)
            log.error("reload failed while applying: \(error)")
            return .failure("reload failed while applying (previous policy restored): \(error)")
        case let .applied(previous: before):
            lastReload = lastReload?.after(ReloadStatus.applied, at: wall.secondsSinceEpoch)
            previous = before
        }
        let next = policy
        for gone in previous.profiles where next.profile(named: gone.name) == nil {
            let path = gone.cgroupPath(parent: options.cgroupParent)
            let members = hierarchy.processes(in: path).count
            if members == 0 {
                try? hierarchy.remove(path + "/" + CgroupHierarchy.placedLeaf)
                try? hierarchy.remove(path)
            } else {
                log.warning("profile \(gone.name) was removed but \(members) process(es) remain in \(path): they are held, with no network (new sockets refused, what their sockets send dropped) until they exit or are moved (vpnctl move)")
            }
        }
        tunnels.releaseHolds(now: now)
        keepLastApplied()
        configureDNS()
        followExecutables()
        FreedMemory.giveBack()
        log.info("reloaded policy: \(Plural.count(policy.profiles.count, "profile"))")
        return ControlResponse(ok: true, message: "policy reloaded: \(Plural.count(policy.profiles.count, "profile"))")
    }

    // MARK: loop

    public func run() throws {
        let loop = EventLoop()
        let requests = requestHandler()
        let server = try ControlServer(path: options.socketPath, loop: loop) { request, caller, reply in
            requests.handle(request, from: Peer.of(socket: caller.fd, passed: caller.passed), reply: reply)
        }
        // systemd's cgroup tree: launches become scopes in the profile's slice (SystemdScopes).
        if options.cgroupParent == "vpn.slice" { requests.scopes = SystemdScopes(loop: loop) }
        defer { requests.scopes = nil }
        self.server = server
        defer { server.close() }
        let monitor = try RoutingMonitor(ignoringRoutesOf: [vpnexecLearnedRouteProtocol])
        let watcher = try CgroupWatcher(paths: watchedCgroupDirectories())
        let signals = try SignalChannel([SIGHUP, SIGTERM, SIGINT])
        loop.watch(monitor.fileDescriptor) { [unowned self] _ in
            let changed = monitor.drain(), deleted = monitor.takeDeletedQuietRoutes()
            // Events lost (nil): the re-read that follows then compares every learned route.
            if deleted == nil { restoreLearnedRoutes(nil) }
            if changed { follow("routing change") }
            if let deleted { restoreLearnedRoutes(deleted) }
        }
        loop.watch(watcher.fileDescriptor) { [unowned self] _ in
            guard watcher.drain() else { return }
            follow("cgroup change")
            // Directories made before their watch (a tree made at once) sent no event: read
            // again while new ones turn up, a level at a time.
            var rounds = 0
            while rounds < 8, watcher.rewatch(watchedCgroupDirectories()) {
                follow("cgroup change")
                rounds += 1
            }
        }
        loop.watch(signals.fileDescriptor) { [unowned self] _ in
            for signal in signals.read() {
                switch signal {
                case SIGHUP:
                    sd_notify(0, "RELOADING=1")
                    _ = reload()
                    sd_notify(0, "READY=1")
                default:
                    log.info("stopping on signal \(signal); the kernel keeps the killswitch")
                    loop.stop()
                }
            }
        }
        // Events can be missed (a directory replaced between two watches, a table someone
        // deleted): once a second the facts are read again and the kernel state checked.
        loop.every(.seconds(1)) { [unowned self] in
            watcher.rewatch(watchedCgroupDirectories())
            follow("periodic check")
            executables.refresh(policy, parent: options.cgroupParent)
            // The loop is alive and has just checked the kernel: systemd's watchdog
            // (WatchdogSec=) restarts a vpnd that stops getting here.
            sd_notify(0, "WATCHDOG=1")
        }
        if let events = executables.execEvents {
            loop.watch(events) { [unowned self] _ in
                executables.handleExecEvents(policy, parent: options.cgroupParent, hierarchy: hierarchy, prepare: { try self.prepareMove(into: $0) })
            }
        }
        // After the signals are blocked (SignalChannel): its threads must not take them.
        try executables.start(on: loop, hierarchy: hierarchy)
        self.loop = loop
        dns.register(on: loop)
        defer { dns.closeAll() }
        // Something may have changed between applying and listening.
        _ = monitor.drain()
        _ = monitor.takeDeletedQuietRoutes()
        try applyPolicy()
        configureDNS()
        followExecutables()
        FreedMemory.giveBack()
        sd_notify(0, "READY=1\nSTATUS=\(Plural.count(policy.profiles.count, "profile"))")
        log.info("listening on \(options.socketPath)")
        try loop.run()
        sd_notify(0, "STOPPING=1")
    }

    /// The profile parent and every directory above it up to the cgroup2 root: where a
    /// profile cgroup, or the parent itself, can be removed and made again; and the users'
    /// trees, where units that join a profile by name appear.
    func watchedCgroupDirectories() -> [String] {
        (RuntimeFacts.directoriesAlong(parent: options.cgroupParent) + [options.cgroupParent]
            + (policy.profiles.isEmpty ? [] : FactsReader.unitDirectories(in: hierarchy))).map(hierarchy.absolute)
    }

    /// Re-plans with fresh facts after the machine changed under us. Applying is
    /// idempotent: with nothing changed, the kernel is only read.
    private func follow(_ reason: String) {
        do {
            try applyPolicy()
            lastFollowError = nil
        } catch {
            // Once per distinct failure: the periodic check would repeat it every second.
            let text = "\(error)"
            if text != lastFollowError { log.error("could not follow a \(reason): \(text)") }
            lastFollowError = text
        }
    }

    /// A learned route someone deleted (`ip route del`, a flush) is put back at once: until its
    /// element ends, a route.domains address would otherwise go direct for non-members, and
    /// a bypassed one into the tunnel for members.
    private func restoreLearnedRoutes(_ deleted: [Route]?) {
        guard deleted?.isEmpty != true else { return }
        do {
            let restored = try applier.restoreLearnedRoutes(deleted)
            learnedRoutesPutBack += restored.count
            if !restored.isEmpty {
                log.warning("put back \(Plural.count(restored.count, "learned route")) deleted by someone else: \(restored.prefix(3).map(\.description).joined(separator: ", "))")
            }
        } catch {
            log.error("could not put back a deleted learned route: \(error)")
        }
    }

    /// The profiles' DNS proxies, for the policy now in force, each asking its profile's
    /// resolvers (ProfileResolvers).
    func configureDNS() {
        dns.configure(policy, resolvers: profileResolvers())
    }

    /// Whom each profile's proxy asks: its `dns`, else its tunnel's resolvers (a built-in
    /// tunnel's `DNS =`, the host's servers for an interface, as last read).
    func profileResolvers() -> [String: ProfileResolvers] {
        let files = tunnelFiles.mapValues { loaded in (path: loaded.servers.first?.path ?? "", dns: loaded.config.interface.dnsServers) }
        return ProfileResolvers.all(policy, wireguardFiles: files, links: appliedFacts?.linkResolvers ?? [:])
    }

    /// The requests' handler, with the running daemon's part of the answers (RequestAnswering).
    private func requestHandler() -> RequestHandler {
        RequestHandler(reconciler: reconciler, cgroups: hierarchy, policyDirectory: options.policyDirectory,
                       cgroupParent: options.cgroupParent, log: log, answers: self)
    }

    /// `vpnctl teardown --remove-killswitch`: everything of ours out of the kernel, then vpnd exits.
    func down() throws -> ControlResponse {
        try applier.teardown()
        AppliedMarker(socketPath: options.socketPath).clear()
        loop?.stop()
        log.notice("down: removed the nft table, rules and routes; exiting")
        return ControlResponse(ok: true, message: "vpnexec is down: no killswitch, no profile routing; vpnd exits")
    }

    /// A gateway whose address the trusted networks asked the kernel for is looked at
    /// again when they say (sooner than the periodic check).
    private func followTrusted(now: MonotonicInstant) {
        guard let loop, let at = trusted.takeRelook() else { return }
        loop.after(at.since(now)) { [unowned self] in follow("gateway re-look") }
    }

    /// Before a move into `path`: every cgroup vpnd keeps exists and its id is in the
    /// applied maps, and `path` has its socket programs.
    func prepareMove(into path: String) throws {
        try reconciler.prepareMove(cgroups: hierarchy, parent: options.cgroupParent)
        try reconciler.checkGuarded(path)
    }

    /// Marks the listed files, listens for exec events while the policy lists executables,
    /// and places the processes that already run a listed program.
    func followExecutables() {
        executables.follow(policy, parent: options.cgroupParent, hierarchy: hierarchy, prepare: { try self.prepareMove(into: $0) })
    }

}

/// Removes everything of ours from the kernel without a running daemon (the recovery
/// path when vpnd is gone and the killswitch must be lifted).
public func teardownKernelState(socketPath: String) throws {
    try KernelApplier().teardown()
    // The socket programs outlive any vpnd: the ones this namespace's vpnd attached go too,
    // and those of vpnds whose namespace is gone.
    let hierarchy = try CgroupHierarchy.system()
    var failures = AdoptedSocketPrograms.detachAll(hierarchy: hierarchy, owner: try SocketProgramSet.currentOwner())
    if let live = LiveNetworkNamespaces.cookies() { failures += AdoptedSocketPrograms.detachOrphans(hierarchy: hierarchy, live: live).failures }
    if let failure = failures.first { throw failure }
    AppliedMarker(socketPath: socketPath).clear()
}


