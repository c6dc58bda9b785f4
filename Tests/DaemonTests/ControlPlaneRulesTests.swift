import Testing
@testable import Daemon

/// The pure rules behind the control socket: who may move what, and who gets a connection.
@Suite struct ControlPlaneRulesTests {
    @Test(arguments: [
        // (uid, source, allowed)
        (1001, "", true),                                                    // root cgroup: nothing confines it
        (1001, "user.slice/user-1001.slice/session-3.scope", true),          // own session
        (1001, "user.slice/user-1001.slice/user@1001.service/app.slice/x.scope", true),
        (1001, "user.slice/user-1002.slice/session-4.scope", false),         // someone else's session
        (1001, "user.slice/user-1001.slice", false),                          // the per-user slice itself
        (1001, "system.slice/transmission.service", false),                  // a system unit
        (1001, "vpn.slice/vpn-home.slice", false),                            // another profile
        (1001, "vpn.slice/vpn-home.slice/app.scope", false),
        (1001, "vpn.slice/stray", false),                                     // below the parent, no profile
        (1001, "vpn.slice/vpn-work.slice", true),                             // already there
        (1001, "vpn.slice/vpn-work.slice/sub", true),
        (1001, "init.scope", false),
        (0, "system.slice/transmission.service", true),                      // root may move anything
        (0, "vpn.slice/vpn-home.slice", true),
    ])
    func moveRules(uid: UInt32, source: String, allowed: Bool) {
        let refusal = Authorization.moveRefusal(uid: uid, from: source, into: "vpn.slice/vpn-work.slice", profileParent: "vpn.slice")
        #expect((refusal == nil) == allowed, "\(source): \(refusal ?? "allowed")")
    }

    @Test func connectionsArePerUserWithRoomForRoot() {
        let limits = ControlServer.Limits(perUser: 2, allUsers: 3, root: 1)
        #expect(ControlServer.admission(uid: 1000, open: [1000], limits: limits) == nil)
        #expect(ControlServer.admission(uid: 1000, open: [1000, 1000], limits: limits)?.contains("from uid 1000 (2, at most 2)") == true)
        #expect(ControlServer.admission(uid: 1001, open: [1000, 1000], limits: limits) == nil, "another user still gets in")
        #expect(ControlServer.admission(uid: 1002, open: [1000, 1000, 1001], limits: limits)?.contains("busy") == true)
        #expect(ControlServer.admission(uid: 0, open: [1000, 1000, 1001], limits: limits) == nil, "root has room of its own")
        #expect(ControlServer.admission(uid: 0, open: [0, 1000], limits: limits) != nil)
    }
}
