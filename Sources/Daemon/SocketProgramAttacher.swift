import Cgroups
import Descriptors
import Glibc
import Plan

/// The edge for the socket programs (Plan/SocketProgramPlan.swift): makes the attachments
/// match the plan, idempotently. A cgroup no longer planned loses its programs; a cgroup
/// planned with another id (removed and made again: its programs went with it) gets them
/// anew; changed settings are a storage write, no program changes.
///
/// The attachments are the kernel's and outlive vpnd (SocketProgramSet). What an earlier
/// vpnd of this network namespace attached is taken over (`adopted`): where the plan wants
/// the cgroup, the new programs go in first and the earlier ones come out after, so no
/// socket meets the cgroup without them; where it does not, they come out.
final class SocketProgramAttacher {
    private let programs: SocketProgramSet
    private let hierarchy: CgroupHierarchy
    private let adopted: AdoptedSocketPrograms
    /// What is attached now, by cgroup path.
    private var attached: [String: SocketProgramAttachment] = [:]
    /// The last failure for each cgroup, so that a retry each second logs nothing new.
    private var failures: [String: String] = [:]

    init(programs: SocketProgramSet, hierarchy: CgroupHierarchy, adopted: AdoptedSocketPrograms) {
        self.programs = programs
        self.hierarchy = hierarchy
        self.adopted = adopted
    }

    /// The cgroups that have programs now, with their settings.
    var attachments: [SocketProgramAttachment] { attached.values.sorted() }

    /// What the programs hold for the cgroup: its settings and the kernel's counters.
    func storage(of attachment: SocketProgramAttachment) -> SocketStorage? { programs.read(cgroup: attachment.id) }

    /// Returns the failures not reported before (the rest of the plan is applied anyway:
    /// the killswitch holds what a cgroup without its programs would send).
    func reconcile(_ desired: [SocketProgramAttachment], pathGuard: PathGuard?) -> [String] {
        let wanted = Dictionary(desired.map { ($0.cgroup, $0) }, uniquingKeysWith: { a, _ in a })
        var reports: [String] = []
        // The guard's map before the guard: it never meets an empty one.
        do throws(SocketProgramSet.Failure) { try programs.setKnown(pathGuard?.known ?? [:]) } catch { reports.append(error.description) }
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
        for attachment in desired {
            do throws(SocketProgramSet.Failure) {
                try reconcile(attachment)
                failures[attachment.cgroup] = nil
            } catch {
                // A cgroup removed since the facts were read is planned without it next time.
                if error.code != ENOENT, error.code != ESTALE, failures[attachment.cgroup] != error.description { reports.append(error.description) }
                failures[attachment.cgroup] = error.description
            }
        }
        failures = failures.filter { wanted[$0.key] != nil }
        return reports
    }

    private func reconcile(_ attachment: SocketProgramAttachment) throws(SocketProgramSet.Failure) {
        let path = attachment.cgroup
        let current = attached[path]
        if current == attachment { return }
        let cgroup: FileDescriptor
        do { cgroup = try .open(hierarchy.absolute(path), O_RDONLY | O_DIRECTORY) } catch { throw SocketProgramSet.Failure(error.operation, code: error.code) }
        var info = stat()
        guard fstat(cgroup.raw, &info) == 0, UInt64(info.st_ino) == attachment.id else {
            throw SocketProgramSet.Failure("attach to \(path)", code: ESTALE, detail: "its id is not \(attachment.id) any more")
        }
        let have = Set(current?.settings.programs ?? [])
        let want = attachment.settings.programs
        // A change of settings keeps the counts; taking over, the earlier vpnd's go on.
        let counts = current == nil ? adopted.storage(of: path, id: attachment.id) : programs.read(cgroup: attachment.id)
        for program in want where !have.contains(program) { try programs.attach(program, to: cgroup, path: path) }
        if !want.isEmpty { try programs.write(attachment.settings, cgroup: attachment.id, counters: counts) }
        attached[path] = attachment
        for program in have where !want.contains(program) { try programs.detach(program, from: cgroup, path: path) }
        for failure in adopted.detach(path, cgroup: cgroup) { throw failure }
    }

    private func detach(_ attachment: SocketProgramAttachment, reports: inout [String]) {
        guard let cgroup = try? FileDescriptor.open(hierarchy.absolute(attachment.cgroup), O_RDONLY | O_DIRECTORY) else { return }
        for program in attachment.settings.programs {
            do throws(SocketProgramSet.Failure) { try programs.detach(program, from: cgroup, path: attachment.cgroup) } catch {
                if error.code != ENOENT { reports.append(error.description) }
            }
        }
    }
}
