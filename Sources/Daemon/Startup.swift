import Applying
import Cgroups
import Control
import DNSProxies
import ExecRules
import Glibc
import Netlink
import Plan
import Policy
import ServiceSupport
import SocketPrograms

/// vpnd's privileged start, as stages: each is made only from the one before, so the
/// order is the compiler's to keep. What needs a capability happens in a stage before
/// `Dropped`; what needs a path the sandbox closes, before `Sandboxed`. A new step that
/// needs CAP_BPF cannot be written after the drop: it would have no stage to take.
public enum Startup {
    /// The socket programs loaded (CAP_BPF), an earlier vpnd's taken over and those of
    /// vpnds whose network namespace is gone removed (finding them enters namespaces:
    /// CAP_SYS_ADMIN).
    public struct ProgramsLoaded {
        let options: DaemonOptions
        let log: Log
        let hierarchy: CgroupHierarchy
        let socketPrograms: SocketProgramSet
        let adopted: AdoptedSocketPrograms
        /// The members' namespaces the earlier vpnd routed: found by the first apply, so a
        /// container keeps going through the restart.
        let earlierPlaces: [UInt64: ForeignNamespaces.Place]

        public init(options: DaemonOptions, log: Log) throws {
            guard !options.cgroupParent.split(separator: "/").isEmpty else {
                throw ApplyError.cgroupParentIsRoot
            }
            (self.options, self.log) = (options, log)
            hierarchy = try CgroupHierarchy.system()
            let owner: UInt64
            do {
                owner = try SocketProgramSet.currentOwner()
                socketPrograms = try SocketProgramSet(owner: owner, root: hierarchy.id(of: "") ?? 1, parentDepth: options.cgroupParent.split(separator: "/").count)
            } catch {
                throw ApplyError.socketProgramsNotLoaded(underlying: error)
            }
            // A vpnd whose network namespace went away without `vpnd --cleanup` left programs
            // that act on nothing but run at every socket made below their cgroup, and fill
            // the 64 a cgroup and hook the kernel takes. Never while any namespace could not
            // be read.
            if let live = LiveNetworkNamespaces.cookies(), live.contains(owner) {
                let (detached, failures) = AdoptedSocketPrograms.detachOrphans(hierarchy: hierarchy, live: live)
                if detached > 0 { log.notice("removed \(Plural.count(detached, "socket program")) left by vpnds whose network namespace is gone") }
                for failure in failures { log.warning("\(failure)") }
            }
            adopted = AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner)
            earlierPlaces = socketPrograms.takeOver(adopted)
        }
    }

    /// The event sources that need privilege opened: the fanotify group and exec events
    /// (CAP_SYS_ADMIN, perhaps in another network namespace), the DNS steering point
    /// (CAP_BPF for its program, CAP_NET_BIND_SERVICE for port 53), and the directory of
    /// the profiles' varlink servers (the sandbox lets vpnd make sockets there, not
    /// directories).
    public struct SourcesOpened {
        let programs: ProgramsLoaded
        let executables: ExecutableEnforcement
        let dnsSteering: DNSSteeringPoint?
        let dnsSteeringFailure: String?
        let resolveDirectory: String?
        let namesFailure: String?
        let socketDirectory: String

        public init(_ programs: ProgramsLoaded) {
            self.programs = programs
            let (options, log) = (programs.options, programs.log)
            executables = ExecutableEnforcement(initialNetworkNamespace: options.initialNetworkNamespace, open: !options.oneshot, log: log)
            let directory = String(options.socketPath[..<(options.socketPath.lastIndex(of: "/") ?? options.socketPath.startIndex)])
            socketDirectory = directory.isEmpty ? "." : directory
            namesFailure = programs.socketPrograms.namesFailure?.description
            resolveDirectory = programs.socketPrograms.followsNames && !options.oneshot ? socketDirectory + "/resolve" : nil
            if let resolveDirectory { mkdir(resolveDirectory, 0o755) }
            if let failure = namesFailure {
                log.warning("members' lookups through systemd-resolved (nss-resolve) and nscd are not followed on this kernel, they leave outside the profile: \(failure); "
                    + "Linux 6.7 or later follows them, else take resolve off the hosts line of /etc/nsswitch.conf (hosts: files dns) and stop nscd")
            }
            // It lives as long as vpnd; a query routed to a proxy while none runs is refused
            // (DNSRouting.steeredQueryGuards).
            if options.oneshot {
                (dnsSteering, dnsSteeringFailure) = (nil, nil)
            } else {
                do {
                    (dnsSteering, dnsSteeringFailure) = (try DNSSteeringPoint(), nil)
                } catch {
                    (dnsSteering, dnsSteeringFailure) = (nil, "\(error)")
                    log.error("DNS steering could not be set up: \(error); \(DNSService.refused). It needs Linux 5.9 or later (sk_lookup)")
                }
            }
        }
    }

    /// The capabilities dropped to those vpnd keeps running (Privileges.dropToMinimum),
    /// and no_new_privs set.
    public struct Dropped {
        let opened: SourcesOpened

        public init(_ opened: SourcesOpened) throws {
            self.opened = opened
            let (options, log, hierarchy) = (opened.programs.options, opened.programs.log, opened.programs.hierarchy)
            guard options.dropPrivileges else { return }
            let keep = Privileges.directoryOverrideNeeded(RuntimeFacts.directoriesAlong(parent: options.cgroupParent).map(hierarchy.absolute))
            try Privileges.dropToMinimum(permitted: keep ? Privileges.permitted : Privileges.effective)
            log.info("capabilities: \(Privileges.current()); no_new_privs set")
        }
    }

    /// The policy loaded, the namespace's lock taken, the kernel's applier made: files the
    /// sandbox would close are opened here.
    public struct Prepared {
        let dropped: Dropped
        let loaded: LoadedPolicy
        let lock: NamespaceLock
        let netlink: Rtnetlink
        let applier: KernelApplier

        public init(_ dropped: Dropped) throws {
            self.dropped = dropped
            let programs = dropped.opened.programs
            let (options, log) = (programs.options, programs.log)
            // Each profile keeps the mark its members' sockets were born with under the vpnd
            // before (a restart moves no one's sockets to another mark): as the kernel has it.
            loaded = try LoadedPolicy(directory: options.policyDirectory,
                                      previous: Daemon.indexes(programs.adopted, hierarchy: programs.hierarchy, parent: options.cgroupParent))
            if !options.oneshot { try dropped.opened.executables.checkEnforceable(loaded.policy) }
            let socketDirectory = dropped.opened.socketDirectory
            try NamespaceLock.makeDirectory(socketDirectory, doing: "cannot make the control socket's directory \(socketDirectory) (--socket)")
            lock = try NamespaceLock()
            netlink = try Rtnetlink()
            applier = try KernelApplier(programs: SocketProgramAttacher(programs: programs.socketPrograms, hierarchy: programs.hierarchy, adopted: programs.adopted))
            applier.onProgramFailure = { [log] in log.warning("a cgroup's socket programs: \($0)") }
            applier.onHoldDeviceFailure = { [log] in
                log.warning("the hold device \(HoldDevice.name): \($0); what the killswitch holds by route is not counted")
            }
            applier.onTransportDrained = { [log] in
                log.notice("transport udp \($0): held \(TransportRules.drainSeconds) s before it goes direct, while what a loop may have left in its daemon drains")
            }
            applier.onTableRestored = { [log] in log.warning("the nft table inet \(vpnexecTableName) was deleted by someone else; put back") }
        }
    }

    /// The sandbox entered (Landlock, seccomp where given): before any thread exists, so
    /// that every thread inherits it (the built-in tunnels start after).
    public struct Sandboxed {
        let prepared: Prepared
        let status: SandboxStatus

        public init(_ prepared: Prepared) throws {
            self.prepared = prepared
            let opened = prepared.dropped.opened
            let (options, log, hierarchy) = (opened.programs.options, opened.programs.log, opened.programs.hierarchy)
            guard options.sandbox else {
                status = SandboxStatus(state: SandboxStatus.off)
                return
            }
            mkdir(options.wireguardSocketDirectory, 0o755)
            if let state = options.stateDirectory { mkdir(state, 0o755) }
            var sandbox = try Sandbox.forDaemon(cgroupRoot: hierarchy.mountPoint, socketDirectory: opened.socketDirectory,
                                                wireguardDirectory: options.wireguardSocketDirectory,
                                                stateDirectory: options.stateDirectory).apply()
            if sandbox.landlockABI != nil, !Sandbox.verify() {
                (sandbox.state, sandbox.reason) = (SandboxStatus.notInForce, "/proc/self/comm opened for writing")
            }
            status = sandbox
            log.info("sandbox: \(sandbox)")
        }
    }
}
