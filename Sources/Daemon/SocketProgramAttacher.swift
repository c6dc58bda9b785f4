import Cgroups
import Descriptors
import Glibc
import Plan
import SocketPrograms

/// The edge for the socket programs (Plan/SocketProgramPlan.swift): makes the attachments
/// match the plan, idempotently, as the kernel has them, not as vpnd last left them. Each
/// pass asks the kernel which of its programs each planned cgroup has (BPF_PROG_QUERY):
/// what is missing is attached (and a program someone detached behind vpnd's back is
/// said to be put back), what is no longer planned comes out, and the settings in the
/// cgroup's storage are written where they differ. A cgroup made again under the same path
/// (a new id) gets them anew.
///
/// The attachments are the kernel's and outlive vpnd (SocketProgramSet). What an earlier
/// vpnd of this network namespace attached is taken over (`adopted`): where the plan wants
/// the cgroup, the new programs go in first and the earlier ones come out after, so no
/// socket meets the cgroup without them; where it does not, they come out.
///
/// A cgroup whose programs the kernel will not take (another program attached there or
/// above without BPF_F_ALLOW_MULTI keeps everyone else's out) is `unguarded`: its members'
/// sockets would be born without the profile's mark and leave direct, which the killswitch
/// (by mark) does not see. The reconciler plans those cgroups held (UnguardedRules) and
/// refuses to place anyone there.
final class SocketProgramAttacher {
    private let programs: SocketProgramSet
    private let hierarchy: CgroupHierarchy
    private let adopted: AdoptedSocketPrograms
    /// What is attached now, all of it, by cgroup path (as of the last pass).
    private var attached: [String: SocketProgramAttachment] = [:]
    /// The planned cgroups the kernel lacks programs of, as of the last pass.
    private(set) var unguarded: [String: UnguardedCgroup] = [:]
    /// Programs put back after someone else detached them, since vpnd started.
    private(set) var putBack = 0
    /// The last failure for each cgroup, so that a retry each second logs nothing new.
    private var failures: [String: String] = [:]

    init(programs: SocketProgramSet, hierarchy: CgroupHierarchy, adopted: AdoptedSocketPrograms) {
        self.programs = programs
        self.hierarchy = hierarchy
        self.adopted = adopted
    }

    /// The cgroups that have all their programs now (verified in the kernel at the last
    /// pass), with their settings.
    var attachments: [SocketProgramAttachment] { attached.values.sorted() }

    /// What the programs hold for the cgroup: its settings and the kernel's counters.
    func storage(of attachment: SocketProgramAttachment) -> SocketStorage? { programs.read(cgroup: attachment.id) }

    func foreignNamespaces() -> [ForeignNamespaces.Seen] { programs.foreignNamespaces() }

    /// The namespaces let out of their cgroups made exactly `cookies`; what to log if not.
    func letOut(_ cookies: [UInt64: ForeignNamespaces.Place]) -> String? {
        do throws(SocketProgramError) { try programs.setLetOut(cookies) } catch { return error.description }
        return nil
    }

    /// The namespaces let out but not in `cookies` held again; what to log if not.
    func holdAgain(keeping cookies: Set<UInt64>) -> String? {
        do throws(SocketProgramError) { try programs.holdAgain(keeping: cookies) } catch { return error.description }
        return nil
    }

    /// Returns what to log that was not reported before: failures, and programs put back
    /// (the rest of the plan is applied anyway).
    func reconcile(_ desired: [SocketProgramAttachment], pathGuard: PathGuard?) -> [String] {
        let wanted = Dictionary(desired.map { ($0.cgroup, $0) }, uniquingKeysWith: { a, _ in a })
        var reports: [String] = []
        // The guard's map before the guard: it never meets an empty one.
        do throws(SocketProgramError) { try programs.setKnown(pathGuard?.known ?? [:]) } catch { reports.append(error.description) }
        for (path, current) in attached where wanted[path]?.id != current.id {
            // A cgroup made again under the path has lost them with the old one.
            if hierarchy.id(of: path) == current.id { detach(current, reports: &reports) }
            attached[path] = nil
        }
        for path in adopted.byCgroup.keys where wanted[path] == nil {
            if let cgroup = try? FileDescriptor.open(hierarchy.absolute(path), O_RDONLY | O_DIRECTORY) {
                reports += adopted.detach(path, cgroup: cgroup).map(\.description)
            } else {
                adopted.forget(path)
            }
        }
        var unguarded: [String: UnguardedCgroup] = [:]
        for attachment in desired {
            do throws(SocketProgramError) {
                let restored = try reconcile(attachment)
                if failures.removeValue(forKey: attachment.cgroup) != nil {
                    reports.append("the socket programs of \(display(attachment.cgroup)) are attached now")
                }
                if !restored.isEmpty {
                    putBack += restored.count
                    reports.append("put back \(restored.map(\.name).joined(separator: ", ")) on \(display(attachment.cgroup)): detached by someone else")
                }
            } catch {
                // A cgroup removed since the facts were read is planned without it next time.
                guard error.code != ENOENT, error.code != ESTALE else { continue }
                let missing = Set(attachment.settings.programs).subtracting(present(attachment) ?? [])
                unguarded[attachment.cgroup] = UnguardedCgroup(id: attachment.id, missing: SocketProgram.inUse.filter(missing.contains), reason: error.description)
                if failures[attachment.cgroup] != error.description { reports.append(error.description) }
                failures[attachment.cgroup] = error.description
            }
        }
        self.unguarded = unguarded
        failures = failures.filter { wanted[$0.key] != nil }
        return reports
    }

    /// One cgroup made to match; returns the programs that were attached at the last pass
    /// and were found gone (put back now).
    private func reconcile(_ attachment: SocketProgramAttachment) throws(SocketProgramError) -> [SocketProgram] {
        let path = attachment.cgroup
        let cgroup = try open(attachment)
        let present = try programs.attached(on: cgroup, path: path)
        let want = attachment.settings.programs
        let current = attached[path]
        let lost = current?.id == attachment.id ? (current?.settings.programs ?? []).filter { want.contains($0) && !present.contains($0) } : []
        // Taking over, the earlier vpnd's counts go on; a change of settings keeps the counts.
        let stored = programs.read(cgroup: attachment.id)
        let counts = stored ?? (current == nil ? adopted.storage(of: path, id: attachment.id) : nil)
        var refused: SocketProgramError?
        var holding = !present.isEmpty
        for program in want where !present.contains(program) {
            do throws(SocketProgramError) {
                try programs.attach(program, to: cgroup, path: path)
                holding = true
            } catch { refused = refused ?? error }
        }
        // The storage exists once any program of ours is attached there (and goes with the
        // last); what is in it is checked too (someone may have written it).
        if holding, programs.read(cgroup: attachment.id).map({ $0.settings != attachment.settings || $0.owner != programs.owner }) ?? true {
            try programs.write(attachment.settings, cgroup: attachment.id, counters: counts)
        }
        if let refused {
            attached[path] = nil
            throw refused
        }
        attached[path] = attachment
        for program in present where !want.contains(program) { try programs.detach(program, from: cgroup, path: path) }
        for failure in adopted.detach(path, cgroup: cgroup) { throw failure }
        return lost
    }

    /// Which of its programs the kernel has on the cgroup now (nil: it could not be asked).
    private func present(_ attachment: SocketProgramAttachment) -> Set<SocketProgram>? {
        guard let cgroup = try? open(attachment) else { return nil }
        return try? programs.attached(on: cgroup, path: attachment.cgroup)
    }

    private func open(_ attachment: SocketProgramAttachment) throws(SocketProgramError) -> FileDescriptor {
        let cgroup: FileDescriptor
        do { cgroup = try .open(hierarchy.absolute(attachment.cgroup), O_RDONLY | O_DIRECTORY) } catch { throw .system(error) }
        var info = stat()
        guard fstat(cgroup.raw, &info) == 0, UInt64(info.st_ino) == attachment.id else {
            throw .cgroupReplaced(path: attachment.cgroup, id: attachment.id)
        }
        return cgroup
    }

    private func display(_ path: String) -> String { path.isEmpty ? "the root cgroup" : path }

    private func detach(_ attachment: SocketProgramAttachment, reports: inout [String]) {
        guard let cgroup = try? FileDescriptor.open(hierarchy.absolute(attachment.cgroup), O_RDONLY | O_DIRECTORY) else { return }
        for program in attachment.settings.programs {
            do throws(SocketProgramError) { try programs.detach(program, from: cgroup, path: attachment.cgroup) } catch {
                if error.code != ENOENT { reports.append(error.description) }
            }
        }
    }
}
