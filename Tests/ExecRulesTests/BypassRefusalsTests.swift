@testable import ExecRules
import Facts
import Policy
import Testing

/// A bypass.executables launch left in its profile (its user may not bypass) is judged by
/// the real uid and groups in /proc/PID/status, counted once per process however many times
/// the guard and exec events see it, and logged once per user, program and rule.
@Suite struct BypassRefusalsTests {
    @Test func credentialsAreTheRealUIDAndEveryGroup() {
        // A set-user-ID root program run by uid 1001 (after the exec, as exec events see it):
        // effective 0, real 1001; the groups are the real gid and the supplementary ones.
        let status = "Name:\tsteam\nUmask:\t0022\nState:\tR (running)\nUid:\t1001\t0\t0\t0\nGid:\t1001\t1001\t1001\t1001\nFDSize:\t64\nGroups:\t27 600 1001 \nNStgid:\t4242\n"
        #expect(ProcessDetails.credentials(status: status) == Credentials(uid: 1001, groups: [27, 600, 1001]))
        #expect(ProcessDetails.credentials(status: "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n") == Credentials(uid: 0, groups: [0]), "no supplementary groups")
        #expect(ProcessDetails.credentials(status: "Name:\tx\nGid:\t5\t5\t5\t5\n") == nil, "no Uid line: unknown, not root")
        #expect(ProcessDetails.credentials(status: "") == nil)
    }

    @Test func aProcessIsCountedOnceAndARefusalSaidOncePerUserProgramAndRule() {
        var ledger = BypassRefusals.Ledger()
        let rule = "the rule at /p/10.toml:9:1 allows user alice (1000)"
        let launch = BypassRefusals.Ledger.Process(pid: 4242, started: 90_000)
        func record(_ process: BypassRefusals.Ledger.Process?, uid: UInt32 = 1001, program: String = "/usr/bin/steam", rule: String = rule) -> (said: Bool, count: Int) {
            let said = ledger.record(process, uid: uid, program: program, rule: rule)
            return (said, ledger.count)
        }
        #expect(record(launch) == (true, 1), "the first: counted and said")
        #expect(record(launch) == (false, 1), "the same exec seen by exec events after the guard, or by a scan")
        #expect(record(BypassRefusals.Ledger.Process(pid: 4243, started: 90_100)) == (false, 2), "another launch: counted, not said again")
        #expect(record(BypassRefusals.Ledger.Process(pid: 4242, started: 95_000)) == (false, 3), "a pid reused by a later process is another process")
        #expect(record(launch, uid: 1002) == (true, 3), "another user: said")
        #expect(record(launch, program: "/usr/games/launcher") == (true, 3), "another program: said")
        #expect(record(launch, rule: "no policy file sets [system] bypass.users or bypass.groups, so only root may") == (true, 3), "the policy changed: its rule is said")
        #expect(record(nil) == (false, 3), "a process gone before it was named is not counted")
    }

    @Test func theLedgerForgetsTheOldestBeyondItsCapacity() {
        var ledger = BypassRefusals.Ledger()
        func record(_ pid: Int32) -> Int {
            _ = ledger.record(BypassRefusals.Ledger.Process(pid: pid, started: 1), uid: 1001, program: "/usr/bin/steam", rule: "r")
            return ledger.count
        }
        let capacity = BypassRefusals.Ledger.capacity
        for pid in 0..<Int32(capacity + 1) { _ = record(pid) }
        #expect(ledger.count == capacity + 1)
        #expect(record(Int32(capacity)) == capacity + 1, "the newest is still remembered")
        #expect(record(0) == capacity + 2, "the oldest was forgotten, so it counts again")
    }
}
