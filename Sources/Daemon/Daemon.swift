import Addresses
import CLinux
import Cgroups
import Control
import CSystemd
import Facts
import Glibc
import Netlink
import Nftables
import Plan
import Policy
import TrustedFiles
import TunnelFiles
import Routing

public struct DaemonOptions: Sendable {
    public var policyDirectory: String
    public var socketPath: String
    /// Where profile cgroups live, relative to the cgroup2 root.
    public var cgroupParent: String
    public var dropPrivileges: Bool
    /// Confine vpnd's own file system writes, program execution and TCP (Landlock).
    public var sandbox: Bool
    /// The initial network namespace, whose process connector reports exec events (the
    /// kernel sends them there only); vpnd in another namespace opens it there.
    public var initialNetworkNamespace = "/proc/1/ns/net"
    /// Where built-in tunnels serve the `wg` tool's socket (IFACE.sock).
    public var wireguardSocketDirectory: String

    public init(policyDirectory: String, socketPath: String, cgroupParent: String = "vpn.slice", dropPrivileges: Bool = true,
                sandbox: Bool = true, wireguardSocketDirectory: String = "/var/run/wireguard") {
        self.sandbox = sandbox
        self.policyDirectory = policyDirectory
        self.socketPath = socketPath
        self.cgroupParent = cgroupParent
        self.dropPrivileges = dropPrivileges
        self.wireguardSocketDirectory = wireguardSocketDirectory
    }
}

/// vpnd: loads the policy, makes the kernel match it, and then serves requests and
/// follows the machine (tunnels appearing and going, cgroups re-created) from one
/// single-threaded poll loop. Stopping it leaves the kernel state in place: the
/// killswitch is the kernel's, not the daemon's.
public final class Daemon {
    let options: DaemonOptions
    let log: Log
    let hierarchy: CgroupHierarchy
    let applier: KernelApplier
    let rtnl: Rtnetlink
    private(set) var policy: Policy
    /// The built-in tunnels' files, read with the policy they belong to.
    private var tunnelFiles: [String: TunnelFiles.Loaded]
    private let tunnels: BuiltInTunnels
    private var server: ControlServer?
    private var loop: EventLoop?
    private let lock: NamespaceLock
    /// The facts the kernel state was last planned from (nil until an apply succeeded).
    private var appliedFacts: RuntimeFacts?
    /// What the sandbox enforces, for status.
    private var sandboxSummary = "off"
    private var lastFollowError: String?
    /// Follows exec events for bypass.executables and route.executables.
    private let executables: ExecutableFollower?
    private var execEventsUnavailable: String?
    /// The profiles' DNS proxies (while vpnd serves).
    private var dns: DNSService?
    /// Every network a tunnel interface has been seen on (allow_lan keeps them tunneled).
    private var seenTunnelNetworks: [String: [IPPrefix]] = [:]

    /// Loads and applies the policy. Throws a PolicyError (nothing was touched) or the
    /// error of the first kernel operation that failed.
    public init(options: DaemonOptions, log: Log) throws {
        self.options = options
        self.log = log
        guard !options.cgroupParent.split(separator: "/").isEmpty else {
            throw ApplyError("the cgroup parent must be a cgroup below the root (e.g. vpn.slice), not the root itself")
        }
        hierarchy = try CgroupHierarchy.system()
        // Exec events may have to be opened in another network namespace: before the drop.
        do {
            executables = ExecutableFollower(events: try ExecutableFollower.openInInitialNamespace(options.initialNetworkNamespace),
                                             reader: try ExecutableReader(), log: log)
        } catch {
            executables = nil
            execEventsUnavailable = "\(error)"
        }
        if options.dropPrivileges {
            let keep = Privileges.directoryOverrideNeeded(RuntimeFacts.directoriesAlong(parent: options.cgroupParent).map(hierarchy.absolute))
            try Privileges.dropToMinimum(permitted: keep ? Privileges.permitted : Privileges.effective)
            log.info("capabilities: \(Privileges.current()); no_new_privs set")
        }
        policy = try Self.loadPolicy(options.policyDirectory)
        tunnelFiles = try TunnelFiles.load(policy)
        try Self.checkEnforceable(policy, execEventsUnavailable: execEventsUnavailable)
        tunnels = BuiltInTunnels(log: log, uapiDirectory: options.wireguardSocketDirectory)
        let socketDirectory = String(options.socketPath[..<(options.socketPath.lastIndex(of: "/") ?? options.socketPath.startIndex)])
        lock = try NamespaceLock(directory: socketDirectory.isEmpty ? "." : socketDirectory)
        applier = try KernelApplier()
        rtnl = try Rtnetlink()
        applier.onTableRestored = { [log] in log.warning("the nft table inet \(vpnexecTableName) was deleted by someone else; put back") }
        if options.sandbox {
            // Before any thread exists (built-in tunnels start below): all inherit it.
            mkdir(options.wireguardSocketDirectory, 0o755)
            // The DNS proxies' ports: the policy's, for every index a profile can have (a
            // reload may add profiles; the sandbox cannot be widened later).
            let base = policy.dns.portBase
            let dnsPorts = base...(base + UInt16(clamping: policy.routing.maximumIndex))
            var summary = try Sandbox.forDaemon(cgroupRoot: hierarchy.mountPoint, socketDirectory: socketDirectory.isEmpty ? "." : socketDirectory,
                                                wireguardDirectory: options.wireguardSocketDirectory, dnsPorts: dnsPorts).apply()
            if summary.hasPrefix("Landlock") {
                summary += Sandbox.verify() ? " (verified)" : " (NOT in force: /proc/self/comm opened for writing)"
            }
            sandboxSummary = summary
            log.info("sandbox: \(summary)")
        }
        try applyPolicy()
        let shown = policy.profiles.prefix(8).map { " \($0.name)->\($0.tunnel.interfaceName)" }.joined()
        log.info("applied policy from \(options.policyDirectory): \(policy.profiles.count) profile(s)" + shown + (policy.profiles.count > 8 ? " ..." : ""))
    }

    static func loadPolicy(_ directory: String) throws -> Policy {
        return try Policy.parse(try PolicyDirectory.read(directory), resolver: SystemNameResolver())
    }

    // MARK: state

    func facts(for policy: Policy? = nil) throws -> RuntimeFacts {
        var facts = try FactsReader(hierarchy: hierarchy, netlink: rtnl).read(policy ?? self.policy, cgroupParent: options.cgroupParent)
        // A tunnel's own networks stay in the tunnel (allow_lan) also while it is down or
        // gone: a built-in tunnel's from its file, any other's as last seen.
        for (interface, loaded) in tunnelFiles {
            facts.tunnelNetworks[interface, default: []] += loaded.config.interface.addresses.map(\.network)
        }
        for (interface, networks) in facts.tunnelNetworks {
            seenTunnelNetworks[interface] = Array(Set(networks + (seenTunnelNetworks[interface] ?? [])))
        }
        for (interface, networks) in seenTunnelNetworks where (policy ?? self.policy).profiles.contains(where: { $0.allowLAN && $0.tunnel.interfaceName == interface }) {
            facts.tunnelNetworks[interface] = IPPrefix.covering(networks + (facts.tunnelNetworks[interface] ?? []))
        }
        return facts
    }

    func ensureCgroups() throws {
        let missing = Planner.cgroups(policy, parent: options.cgroupParent).filter { hierarchy.id(of: $0) == nil }
        guard !missing.isEmpty else { return }
        try Privileges.withDirectoryOverride {
            for path in missing { try hierarchy.create(path) }
        }
    }

    /// A policy that lists executables needs exec events; without them it would look
    /// stricter than what is enforced, so it is refused.
    static func checkEnforceable(_ policy: Policy, execEventsUnavailable: String?) throws {
        if policy.listsExecutables, let reason = execEventsUnavailable {
            throw ApplyError("bypass.executables and route.executables need exec events, which this vpnd cannot receive (\(reason))")
        }
    }

    /// The nft table, rules and routes first (the killswitch is in place before any
    /// tunnel starts), then the built-in tunnels, then again for the routes to their new
    /// interfaces. A built-in tunnel that cannot start leaves its profile fail-closed.
    func applyPolicy() throws {
        try ensureCgroups()
        try apply(try facts())
        guard !tunnelFiles.isEmpty || tunnels.isRunningAny else { return }
        tunnels.reconcile(tunnelFiles, bypassMark: policy.routing.bypassMark, netlink: rtnl)
        try apply(try facts())
    }

    private func apply(_ facts: RuntimeFacts) throws {
        appliedFacts = nil
        try applier.apply(Planner.plan(policy, facts: facts))
        appliedFacts = facts
    }

    func reload() -> ControlResponse {
        let next: Policy
        let nextFiles: [String: TunnelFiles.Loaded]
        do {
            next = try Self.loadPolicy(options.policyDirectory)
            nextFiles = try TunnelFiles.load(next)
            try Self.checkEnforceable(next, execEventsUnavailable: execEventsUnavailable)
        } catch {
            log.error("reload refused, running state unchanged:\n\(error)")
            return .failure("policy not reloaded, the running state is unchanged:\n\(error)")
        }
        let previous = policy
        let previousFiles = tunnelFiles
        policy = next
        tunnelFiles = nextFiles
        do {
            try applyPolicy()
        } catch {
            policy = previous
            tunnelFiles = previousFiles
            log.error("reload failed while applying: \(error)")
            try? applyPolicy()
            return .failure("reload failed while applying (previous policy restored): \(error)")
        }
        for gone in previous.profiles where next.profile(named: gone.name) == nil {
            let path = gone.cgroupPath(parent: options.cgroupParent)
            let members = hierarchy.processes(in: path).count
            if members == 0 {
                try? hierarchy.remove(path)
            } else {
                log.warning("profile \(gone.name) was removed but \(members) process(es) remain in \(path); their new connections are no longer routed")
            }
        }
        configureDNS()
        followExecutables()
        log.info("reloaded policy: \(policy.profiles.count) profile(s)")
        return ControlResponse(ok: true, message: "policy reloaded: \(policy.profiles.count) profile(s)")
    }

    // MARK: loop

    public func run() throws {
        let loop = EventLoop()
        let server = try ControlServer(path: options.socketPath, loop: loop) { [unowned self] request, caller, reply in
            reply(handle(request, from: caller))
        }
        self.server = server
        defer { server.close() }
        let monitor = try RoutingMonitor()
        let watcher = try CgroupWatcher(paths: watchedCgroupDirectories())
        let signals = try SignalChannel([SIGHUP, SIGTERM, SIGINT])
        loop.watch(monitor.fileDescriptor) { [unowned self] _ in
            if monitor.drain() { follow("routing change") }
        }
        loop.watch(watcher.fileDescriptor) { [unowned self] _ in
            guard watcher.drain() else { return }
            follow("cgroup change")
            watcher.rewatch()
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
        loop.every(1) { [unowned self] in
            watcher.rewatch()
            follow("periodic check")
        }
        if let executables {
            loop.watch(executables.events.fileDescriptor) { [unowned self] _ in
                executables.handleEvents(policy: policy, parent: options.cgroupParent, hierarchy: hierarchy, prepare: { try self.prepareMove() })
            }
        }
        self.loop = loop
        dns = DNSService(loop: loop, applier: applier, log: log)
        defer { dns?.closeAll() }
        // Something may have changed between applying and listening.
        _ = monitor.drain()
        try applyPolicy()
        configureDNS()
        followExecutables()
        sd_notify(0, "READY=1\nSTATUS=\(policy.profiles.count) profile(s)")
        log.info("listening on \(options.socketPath)")
        try loop.run()
        sd_notify(0, "STOPPING=1")
    }

    /// The profile parent and every directory above it up to the cgroup2 root: where a
    /// profile cgroup, or the parent itself, can be removed and made again.
    func watchedCgroupDirectories() -> [String] {
        (RuntimeFacts.directoriesAlong(parent: options.cgroupParent) + [options.cgroupParent]).map(hierarchy.absolute)
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

    // MARK: requests

    func handle(_ request: ControlRequest, from caller: ControlServer.Caller) -> ControlResponse {
        guard let peer = Peer.of(socket: caller.fd, passed: caller.passed) else { return .failure("cannot identify the caller") }
        do {
            switch request {
            case let .exec(name):
                let profile = try Authorization.profile(named: name, in: policy, directory: options.policyDirectory).get()
                if let refusal = Authorization.check(peer, mayUse: profile) {
                    log.notice("refused: \(refusal)")
                    return .failure(refusal.description)
                }
                guard let process = peer.process else {
                    log.notice("refused \(peer.userName): \(peer.unidentified ?? "unidentified")")
                    return .failure("refused: \(peer.unidentified ?? "cannot identify the calling process")")
                }
                try move(process, into: profile, by: peer)
                log.info("\(peer.userName) started pid \(peer.pid) (\(process.commandName())) in profile \(profile.name)")
                return ControlResponse(ok: true, message: "pid \(peer.pid) is in profile \(profile.name)")
            case let .move(name, pid):
                let profile = try Authorization.profile(named: name, in: policy, directory: options.policyDirectory).get()
                if let refusal = Authorization.check(peer, mayUse: profile) { return .failure(refusal.description) }
                // Opened before any check and verified alive after them: the checks were
                // about this process, not one that took its pid.
                let process = try ProcessHandle.open(pid: pid)
                let owner = process.realUID()
                guard process.isAlive, let owner else { return .failure("no process \(pid)") }
                guard peer.uid == 0 || owner == peer.uid else {
                    return .failure("process \(pid) belongs to uid \(owner); \(peer.userName) may only move its own processes")
                }
                try move(process, into: profile, by: peer)
                log.info("\(peer.userName) moved pid \(pid) (\(process.commandName())) into profile \(profile.name)")
                return ControlResponse(ok: true, message: "pid \(pid) moved into profile \(profile.name); its existing connections keep their route, new ones use the tunnel")
            case .status:
                return ControlResponse(ok: true, status: try statusReport())
            case .plan:
                let fresh = try Self.loadPolicy(options.policyDirectory)
                let facts = try facts(for: fresh)
                let names = Dictionary(facts.links.values.map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
                return ControlResponse(ok: true, message: PlanText.render(Planner.plan(fresh, facts: facts), interfaceNames: names))
            case .reload:
                if let refusal = Authorization.checkRoot(peer, action: "reload the policy") { return .failure(refusal.description) }
                return reload()
            case .down:
                if let refusal = Authorization.checkRoot(peer, action: "take vpnexec down") { return .failure(refusal.description) }
                try applier.teardown()
                loop?.stop()
                log.notice("down: removed the nft table, rules and routes; exiting")
                return ControlResponse(ok: true, message: "vpnexec is down: no killswitch, no profile routing; vpnd exits")
            }
        } catch let failure as RequestFailure {
            return .failure(failure.description)
        } catch {
            log.error("request failed: \(error)")
            return .failure("\(error)")
        }
    }

    /// The profiles' DNS proxies, for the policy now in force (built-in tunnels' `DNS =`
    /// serve profiles without `dns`).
    private func configureDNS() {
        var builtIn: [String: [IPAddress]] = [:]
        for loaded in tunnelFiles.values { builtIn[loaded.profile] = loaded.config.interface.dnsServers }
        dns?.configure(policy, builtInServers: builtIn)
    }

    /// Listens for exec events while the policy lists executables, and places the
    /// processes that already run a listed program.
    private func followExecutables() {
        guard let executables else { return }
        executables.follow(policy)
        executables.scanAll(policy: policy, parent: options.cgroupParent, hierarchy: hierarchy, prepare: { try self.prepareMove() })
    }

    /// Before a move: every cgroup vpnd keeps exists and its id is in the applied maps.
    private func prepareMove() throws {
        let paths = Planner.cgroups(policy, parent: options.cgroupParent)
        if paths.contains(where: { hierarchy.id(of: $0) == nil || hierarchy.id(of: $0) != appliedFacts?.cgroupIDs[$0] }) {
            try applyPolicy()
        }
    }

    /// Into the profile's cgroup, if the caller may take the process out of where it is.
    /// The kernel's maps must know the cgroup's id before the process runs on in it: a
    /// cgroup systemd or an admin removed (and maybe made again, with a new id) is brought
    /// back and its id applied first, and checked again after the move.
    private func move(_ process: ProcessHandle, into profile: Profile, by peer: Peer) throws {
        let path = profile.cgroupPath(parent: options.cgroupParent)
        guard let source = CgroupHierarchy.cgroup(ofProcess: process.pid), process.isAlive else {
            throw RequestFailure("process \(process.pid) exited")
        }
        if let refusal = Authorization.check(peer, mayMove: process.pid, from: source, into: path,
                                             profileParent: options.cgroupParent, policy: policy) {
            log.notice("refused: \(refusal)")
            throw refusal
        }
        try prepareMove()
        try hierarchy.move(process, to: path)
        try prepareMove()
    }

    func dnsStatus(_ profile: Profile) -> DNSStatus? {
        guard let counters = dns?.counters(of: profile.name) else { return nil }
        let names = ProfileObjectNames(profile.name)
        var sizes: [String: Int] = [:]
        for (set, used, ipv4) in [(names.bypassDomainSet(ipv4: true), !profile.bypassDomains.isEmpty, true),
                                  (names.bypassDomainSet(ipv4: false), !profile.bypassDomains.isEmpty, false),
                                  (names.routeDomainSet(ipv4: true), !profile.routeDomains.isEmpty, true),
                                  (names.routeDomainSet(ipv4: false), !profile.routeDomains.isEmpty, false)] where used {
            sizes[set] = (try? applier.elements(of: set, ipv4: ipv4).count) ?? 0
        }
        var servers = profile.dnsServers
        if servers.isEmpty, let loaded = tunnelFiles[profile.tunnel.interfaceName] { servers = loaded.config.interface.dnsServers }
        return DNSStatus(port: policy.dns.port(for: profile), servers: servers.map(\.description),
                         bypassDomains: profile.bypassDomains.map(\.description), routeDomains: profile.routeDomains.map(\.description),
                         answered: counters.answered, forwarded: counters.forwarded, failed: counters.failed, dropped: counters.droppedTotal,
                         setSizes: sizes)
    }

    func exceptionStatus(_ profile: Profile, direct: Traffic) -> ExceptionStatus {
        var status = ExceptionStatus()
        status.allowLAN = profile.allowLAN
        status.allowMulticast = profile.allowMulticast
        status.routeNetworks = profile.routeNetworks.map(\.description)
        status.bypassExecutables = profile.bypassExecutables
        status.routeExecutables = profile.routeExecutables
        status.execMoves = executables?.moves[profile.name] ?? 0
        status.direct = direct
        return status
    }

    func statusReport() throws -> StatusReport {
        let counters = try applier.counters()
        let links = try rtnl.links()
        let addresses = try rtnl.addresses()
        func traffic(_ name: String) -> Traffic {
            Traffic(packets: counters[name]?.packets ?? 0, bytes: counters[name]?.bytes ?? 0)
        }
        let profiles = policy.profiles.map { profile -> ProfileStatus in
            let names = ProfileObjectNames(profile.name)
            let path = profile.cgroupPath(parent: options.cgroupParent)
            let link = links.first { $0.name == profile.tunnel.interfaceName }
            let state = link.map { $0.isUp && $0.isRunning ? "up" : "down" } ?? "missing"
            var tunnel = TunnelStatus(
                interface: profile.tunnel.interfaceName, state: state,
                addresses: link.map { l in addresses.filter { $0.interfaceIndex == l.index }.map(\.prefix.description) } ?? [],
                rxBytes: link?.statistics.rxBytes ?? 0, txBytes: link?.statistics.txBytes ?? 0)
            if profile.tunnel.isBuiltIn {
                tunnel.wireguard = tunnels.status(interface: profile.tunnel.interfaceName).map(WireGuardReport.init)
                    ?? WireGuardReport(publicKey: nil, listenPort: nil, peers: [], drops: [:])
            }
            return ProfileStatus(
                name: profile.name, mark: policy.routing.mark(forIndex: profile.index), table: profile.table,
                killswitch: profile.killswitch, cgroup: path, members: hierarchy.processes(in: path).count,
                tunnel: tunnel, sent: traffic(names.sentCounter), received: traffic(names.receivedCounter),
                throughTunnel: traffic(names.tunnelCounter), droppedByKillswitch: traffic(names.droppedCounter),
                exceptions: exceptionStatus(profile, direct: traffic(names.directCounter)), dns: dnsStatus(profile))
        }
        return StatusReport(daemonPID: getpid(), policyDirectory: options.policyDirectory,
                            cgroupRoot: hierarchy.mountPoint, profiles: profiles,
                            droppedUnknownCgroup: traffic(unknownCgroupCounter), refusedConnections: server?.refusedConnections ?? 0,
                            sandbox: sandboxSummary, bypassMoves: executables?.moves[Policy.bypassSliceName] ?? 0,
                            bypassed: traffic(bypassedCounter))
    }
}

/// Removes everything of ours from the kernel without a running daemon (the recovery
/// path when vpnd is gone and the killswitch must be lifted).
public func teardownKernelState() throws {
    try KernelApplier().teardown()
}


