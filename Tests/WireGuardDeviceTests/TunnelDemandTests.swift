import Addresses
import Monotonic
import Testing
import WireGuard
@testable import WireGuardDevice

/// The on-demand state machine, driven by a fake clock: down until a member or a packet,
/// connecting until a handshake, idle teardown, and `vpnctl up/down` holds.
@Suite struct TunnelDemandTests {
    let idle = MonotonicInstant.Duration.seconds(600)
    func at(_ seconds: Double) -> MonotonicInstant { .seconds(1000 + seconds) }

    @Test func alwaysUpConnectsUntilItsFirstHandshakeAndNeverIdles() {
        var demand = TunnelDemand(settings: .alwaysUp, now: at(0))
        #expect(demand.phase == .connecting && demand.reason == .started && demand.acceptsInbound && demand.isRunning)
        #expect(demand.why == "vpnd started the tunnel")
        #expect(demand.packets(now: at(1)) == .pass)
        #expect(demand.tick(now: at(15)) == nil && demand.phase == .connecting, "no handshake yet, however long")
        demand.handshakeCompleted(now: at(16))
        #expect(demand.phase == .up && demand.reason == .started && demand.since == at(16))
        #expect(demand.tick(now: at(100_000)) == nil && demand.phase == .up)
        #expect(demand.idleDeadline == nil)
    }

    @Test func onDemandStaysDownAndSilentUntilAMemberAppears() {
        var demand = TunnelDemand(settings: .init(onDemand: true, idle: idle), now: at(0))
        #expect(demand.phase == .downOnDemand && !demand.acceptsInbound && !demand.isRunning)
        #expect(demand.reason == .startedDown && demand.why == "vpnd started; no member or packet yet")
        #expect(demand.tick(now: at(5000)) == nil && demand.phase == .downOnDemand)
        #expect(demand.membersChanged(present: false, now: at(5001)) == nil)
        #expect(demand.membersChanged(present: true, now: at(5002)) == .bringUp)
        #expect(demand.phase == .connecting && demand.reason == .member && demand.since == at(5002))
        // A second report of the same members changes nothing.
        #expect(demand.membersChanged(present: true, now: at(5003)) == nil && demand.since == at(5002))
        demand.handshakeCompleted(now: at(5004))
        #expect(demand.phase == .up && demand.reason == .member && demand.since == at(5004))
        demand.handshakeCompleted(now: at(5005))
        #expect(demand.since == at(5004), "a later handshake (a rekey) is not a transition")
    }

    /// A multihop exit running through this tunnel counts as a member: it brings the tunnel
    /// up (saying so) and keeps it from idling until the exit goes down.
    @Test func aRunningExitCountsAsAMember() {
        var demand = TunnelDemand(settings: .init(onDemand: true, idle: .seconds(3)), now: at(0))
        #expect(demand.membersChanged(present: true, now: at(1), why: .exit) == .bringUp)
        #expect(demand.phase == .connecting && demand.reason == .exit)
        demand.handshakeCompleted(now: at(2))
        #expect(demand.tick(now: at(100)) == nil && demand.idleDeadline == nil, "no idle while the exit runs")
        #expect(demand.membersChanged(present: false, now: at(101), why: .exit) == nil)
        #expect(demand.tick(now: at(103.5)) == nil)
        #expect(demand.tick(now: at(104)) == .tearDown && demand.reason == .idle, "idle counts from the exit going down")
    }

    @Test func theFirstPacketIsTheUniversalTrigger() {
        var demand = TunnelDemand(settings: .init(onDemand: true, idle: idle), now: at(0))
        #expect(demand.packets(now: at(3), destination: "192.0.2.80") == .bringUpThenPass)
        #expect(demand.phase == .connecting && demand.reason == .packet)
        #expect(demand.packets(now: at(3.1), destination: "192.0.2.81") == .pass, "the packets behind it wait for the same handshake")
        #expect(demand.phase == .connecting && demand.since == at(3))
        // Status and the log line name the first packet's destination, as long as it is the reason.
        #expect(demand.why == "a packet was routed into the tunnel (to 192.0.2.80)")
        #expect(TunnelEvent.demandChanged(demand.phase, why: demand.why).description == "connecting: a packet was routed into the tunnel (to 192.0.2.80)")
        demand.handshakeCompleted(now: at(4))
        #expect(demand.why == "a packet was routed into the tunnel (to 192.0.2.80)")
        _ = demand.tick(now: at(4 + 600))
        #expect(demand.phase == .downOnDemand && demand.why == "idle: no members and no traffic")
    }

    @Test func idleCountsFromTheLastMemberOrPacketEitherWay() {
        var demand = TunnelDemand(settings: .init(onDemand: true, idle: idle), now: at(0))
        _ = demand.membersChanged(present: true, now: at(10))
        demand.handshakeCompleted(now: at(11))
        #expect(demand.idleDeadline == nil, "members keep it up")
        #expect(demand.tick(now: at(10_000)) == nil && demand.phase == .up)
        _ = demand.membersChanged(present: false, now: at(10_000))
        #expect(demand.idleDeadline == at(10_600))
        _ = demand.packets(now: at(10_300))
        demand.traffic(at: at(10_400))
        demand.traffic(at: at(10_350))
        #expect(demand.idleDeadline == at(11_000), "the latest traffic, in or out, counts")
        #expect(demand.tick(now: at(10_999)) == nil && demand.phase == .up)
        #expect(demand.tick(now: at(11_000)) == .tearDown)
        #expect(demand.phase == .downOnDemand && demand.reason == .idle && demand.since == at(11_000))
        #expect(!demand.acceptsInbound && demand.idleDeadline == nil)
        #expect(demand.tick(now: at(20_000)) == nil, "down is down: nothing to tear down again")
        // Up again by the next member, and the countdown starts over once it leaves.
        #expect(demand.membersChanged(present: true, now: at(20_001)) == .bringUp)
        _ = demand.membersChanged(present: false, now: at(20_002))
        #expect(demand.idleDeadline == at(20_602))
        #expect(demand.tick(now: at(20_602)) == .tearDown, "connecting counts as up for the idle teardown")
    }

    @Test func onDemandWithoutIdleStaysUpOnceUp() {
        var demand = TunnelDemand(settings: .init(onDemand: true), now: at(0))
        _ = demand.packets(now: at(1))
        #expect(demand.tick(now: at(1_000_000)) == nil && demand.phase == .connecting)
    }

    @Test func vpnctlDownHoldsDownAgainstMembersAndPackets() {
        var demand = TunnelDemand(settings: .init(onDemand: true, idle: idle), now: at(0))
        _ = demand.membersChanged(present: true, now: at(1))
        demand.handshakeCompleted(now: at(2))
        #expect(demand.holdDown(now: at(3)) == .tearDown)
        #expect(demand.phase == .heldDown && demand.reason == .manualDown && demand.hold == .down && !demand.acceptsInbound)
        #expect(demand.packets(now: at(4)) == .drop)
        #expect(demand.membersChanged(present: true, now: at(5)) == nil)
        #expect(demand.tick(now: at(5000)) == nil && demand.phase == .heldDown)
        #expect(demand.holdDown(now: at(5001)) == nil, "already held")
        // vpnctl up: up now and no idle teardown, members or not.
        #expect(demand.holdUp(now: at(6000)) == .bringUp)
        #expect(demand.phase == .connecting && demand.reason == .manualUp && demand.hold == .up)
        _ = demand.membersChanged(present: false, now: at(6001))
        #expect(demand.idleDeadline == nil && demand.tick(now: at(100_000)) == nil && demand.phase == .connecting)
    }

    @Test func vpnctlDownFromDownOnDemandHasNothingToTearDown() {
        var demand = TunnelDemand(settings: .init(onDemand: true), now: at(0))
        #expect(demand.holdDown(now: at(1)) == nil && demand.phase == .heldDown)
        #expect(demand.packets(now: at(2)) == .drop)
    }

    @Test func vpnctlUpOnARunningTunnelOnlyHoldsIt() {
        var demand = TunnelDemand(settings: .alwaysUp, now: at(0))
        #expect(demand.holdUp(now: at(0.5)) == nil && demand.phase == .connecting && demand.reason == .started && demand.hold == .up)
        demand.handshakeCompleted(now: at(0.7))
        #expect(demand.holdUp(now: at(1)) == nil && demand.phase == .up && demand.reason == .started && demand.hold == .up)
        #expect(demand.holdDown(now: at(2)) == .tearDown && demand.phase == .heldDown)
        #expect(demand.holdUp(now: at(3)) == .bringUp && demand.phase == .connecting)
        demand.handshakeCompleted(now: at(4))
        #expect(demand.phase == .up && demand.reason == .manualUp)
    }

    @Test func aReloadEndsTheHold() {
        // Held down, no members: back to down on demand.
        var onDemand = TunnelDemand(settings: .init(onDemand: true, idle: idle), now: at(0))
        _ = onDemand.holdDown(now: at(1))
        #expect(onDemand.release(now: at(2)) == nil && onDemand.phase == .downOnDemand && onDemand.reason == .released && onDemand.hold == nil)
        #expect(onDemand.release(now: at(3)) == nil && onDemand.reason == .released)
        // Held down with members there: up again.
        _ = onDemand.holdDown(now: at(4))
        _ = onDemand.membersChanged(present: true, now: at(5))
        #expect(onDemand.release(now: at(6)) == .bringUp && onDemand.phase == .connecting)
        // Held up: stays up, and the idle countdown starts from the reload.
        var held = TunnelDemand(settings: .init(onDemand: true, idle: idle), now: at(0))
        _ = held.holdUp(now: at(1))
        #expect(held.idleDeadline == nil)
        #expect(held.release(now: at(50)) == nil && held.phase == .connecting && held.idleDeadline == at(650))
        // An always-up tunnel held down comes back up.
        var always = TunnelDemand(settings: .alwaysUp, now: at(0))
        _ = always.holdDown(now: at(1))
        #expect(always.release(now: at(2)) == .bringUp && always.phase == .connecting)
    }
}

/// Which packets wake a tunnel that is down on demand: unicast ones for a peer, not the
/// kernel's own chatter on a fresh interface.
@Suite struct DemandTriggerTests {
    func packet(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var text = Substring(hex.filter { !$0.isWhitespace })
        while !text.isEmpty { bytes.append(UInt8(text.prefix(2), radix: 16)!); text = text.dropFirst(2) }
        return bytes
    }

    @Test func readsDestinationsAndSkipsChatter() throws {
        let tcp4 = packet("45000028 00000000 40060000 0a530002 c0000250") + [UInt8](repeating: 0, count: 20)
        let rs6 = packet("60000000 00103aff fe800000000000000000000000000001 ff020000000000000000000000000002") + [UInt8](repeating: 0, count: 16)
        let everything = ["0.0.0.0/0", "::/0"].compactMap(IPPrefix.init)
        let v4 = try #require(tcp4.withUnsafeBytes { DemandTrigger.destination(of: $0) })
        #expect(v4.description == "192.0.2.80")
        #expect(DemandTrigger.triggers(v4, allowedIPs: everything))
        #expect(!DemandTrigger.triggers(v4, allowedIPs: ["10.0.0.0/8"].compactMap(IPPrefix.init)), "no peer for it: the engine would drop it")
        let v6 = try #require(rs6.withUnsafeBytes { DemandTrigger.destination(of: $0) })
        #expect(v6.description == "ff02::2")
        #expect(!DemandTrigger.triggers(v6, allowedIPs: everything), "a router solicitation is nobody's")
        for quiet in ["255.255.255.255", "224.0.0.22", "169.254.1.1", "fe80::1"] {
            #expect(!DemandTrigger.triggers(try #require(IPAddress(quiet)), allowedIPs: everything), "\(quiet)")
        }
        #expect([UInt8]([0x45, 0]).withUnsafeBytes { DemandTrigger.destination(of: $0) } == nil)
    }
}
