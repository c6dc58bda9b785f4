import Cgroups
import Glibc
import Plan

/// The edge for birth marks (Plan/BirthMarks.swift): holds one BPF link per cgroup whose
/// sockets are born marked and makes the set match the plan, idempotently. A cgroup no
/// longer planned, or planned with another id (removed and made again: the old link went
/// with the old cgroup), loses its link; a new one gets one; a changed mark is a storage
/// update.
///
/// The links are vpnd's descriptors, on purpose: the attachments end when vpnd does, so
/// none is ever stale (a restarted vpnd starts from none; with attachments that outlive
/// their loader, a successor could neither tell its predecessor's programs from others'
/// nor detach them without CAP_SYS_ADMIN for BPF_PROG_GET_FD_BY_ID). While vpnd is stopped,
/// sockets are born unmarked and nftables marks, re-routes and NATs them, killswitch
/// included, as it does for every socket made before its process joined.
final class SocketMarkAttacher {
    private let program: SocketMarkProgram
    private let hierarchy: CgroupHierarchy
    private var links: [String: SocketMarkLink] = [:]
    /// The last failure for each cgroup, so that a retry each second logs nothing new.
    private var failures: [String: String] = [:]

    init(program: SocketMarkProgram, hierarchy: CgroupHierarchy) {
        self.program = program
        self.hierarchy = hierarchy
    }

    /// The cgroups whose sockets are born marked now.
    var attached: [String] { links.keys.sorted() }

    /// Returns the failures not reported before (the rest of the plan is applied anyway:
    /// nftables marks what is not born marked).
    func reconcile(_ desired: [SocketMarkAttachment]) -> [String] {
        let wanted = Dictionary(desired.map { ($0.cgroup, $0) }, uniquingKeysWith: { a, _ in a })
        for (path, link) in links where wanted[path]?.id != link.id {
            links[path] = nil
        }
        var reports: [String] = []
        for attachment in desired {
            do throws(SocketMarkProgram.Failure) {
                if let link = links[attachment.cgroup] {
                    if link.mark != attachment.mark { try program.update(link, mark: attachment.mark) }
                } else {
                    links[attachment.cgroup] = try program.attach(path: hierarchy.absolute(attachment.cgroup), id: attachment.id, mark: attachment.mark)
                }
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
}
