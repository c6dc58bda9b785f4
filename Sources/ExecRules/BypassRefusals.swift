import Facts
import Policy
import Synchronization

/// Execs of bypass.executables programs left where they were because their users may not
/// bypass (ExecutableRules' `.bypassRefused`): counted for status and logged with the rule
/// that refused. Both ways of following execs report here — the guard (fanotify) on its own
/// thread, exec events on the event loop — and between them they see one exec twice where
/// both run, and a process again at every start, reload and lost-events scan. So a process
/// is counted once (its pid and start time name it), and a refusal is logged once per user,
/// program and rule: a user who starts a listed program a thousand times is one line, and a
/// policy that changes the rule says it again.
final class BypassRefusals: Sendable {
    /// What is counted and what is said, without the lock (pure, for tests).
    struct Ledger {
        /// Processes remembered at most: beyond, the oldest are forgotten (and would be
        /// counted again if a later scan saw them still running).
        static let capacity = 4096

        struct Process: Hashable {
            var pid: Int32
            var started: UInt64
        }

        struct Said: Hashable {
            var uid: UInt32?
            var program: String
            var rule: String
        }

        private(set) var count = 0
        private var counted: Set<Process> = []
        private var order: [Process] = []
        private var said: Set<Said> = []

        /// Counts the process unless it was counted already; true when the refusal is to be
        /// logged (the first for this user, program and rule).
        mutating func record(_ process: Process?, uid: UInt32?, program: String, rule: String) -> Bool {
            if let process, counted.insert(process).inserted {
                count += 1
                order.append(process)
                if order.count > Self.capacity { counted.remove(order.removeFirst()) }
            }
            return said.insert(Said(uid: uid, program: program, rule: rule)).inserted
        }
    }

    private let ledger = Mutex(Ledger())

    var count: Int { ledger.withLock { $0.count } }

    /// Counts the refusal of process `pid`, while it is known to be alive (the guard: before
    /// it answers; a short-lived program may be gone right after). Returns the line to log
    /// when it is the first for its user, program and rule: logged by the caller, after the
    /// exec was answered (writing a log can block). `user`: the credentials the decision
    /// read (nil: unreadable). Users are named by uid only: a name lookup can stall (NSS
    /// over the network), and the guard's thread must not.
    func record(pid: Int32, user: Credentials?, profile: String, program: String, rule: String) -> String? {
        let process = ProcessDetails.startTicks(of: pid).map { Ledger.Process(pid: pid, started: $0) }
        guard ledger.withLock({ $0.record(process, uid: user?.uid, program: program, rule: rule) }) else { return nil }
        let who = user.map { "uid \($0.uid)" } ?? "its user"
        return "pid \(pid) (\(who)) executes \(program), a bypass.executables program of profile \(profile): it stays in the profile, not moved into vpn-\(Policy.bypassSliceName).slice: \(who) may not go outside the profiles: \(rule) (said once per user, program and rule)"
    }
}
