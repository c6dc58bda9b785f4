@testable import Daemon
import Testing

/// Where `vpnctl move --out` takes a process.
@Suite struct SessionPlacementTests {
    @Test func aLiveSessionScopeWins() {
        #expect(SessionPlacement.destination(uid: 1001, sessionID: 7, systemdManagesCgroups: true,
                                             exists: { $0 == "user.slice/user-1001.slice/session-7.scope" }) == "user.slice/user-1001.slice/session-7.scope")
    }

    @Test func withoutACgroupManagerTheRootCgroup() {
        #expect(SessionPlacement.destination(uid: 1001, sessionID: 7, systemdManagesCgroups: false, exists: { _ in false }) == "")
        #expect(SessionPlacement.destination(uid: 1001, sessionID: nil, systemdManagesCgroups: false, exists: { _ in true }) == "")
    }

    /// Under systemd a process of no live session came from some unit, which is not vpnd's
    /// to guess: refused, never the root cgroup behind systemd's back.
    @Test func underSystemdWithoutASessionNothing() {
        #expect(SessionPlacement.destination(uid: 1001, sessionID: 7, systemdManagesCgroups: true, exists: { _ in false }) == nil)
        #expect(SessionPlacement.destination(uid: 1001, sessionID: nil, systemdManagesCgroups: true, exists: { _ in true }) == nil)
    }
}
