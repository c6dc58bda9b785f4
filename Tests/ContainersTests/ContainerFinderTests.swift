import Containers
import Plan
import Routing
import Testing

/// How a member's namespace reaches the host decides whether it is routed (all it has but
/// loopback are veths whose other ends are ours, on their own or a bridge's ports), relayed
/// (TUN/TAP devices alone) or held.
struct ContainerFinderTests {
    static func link(_ index: Int32, _ name: String, kind: String?, peer: Int32? = nil, namespace: Int32? = nil, master: Int32? = nil) -> Link {
        var link = Link(index: index, name: name, isUp: true, isRunning: true, mtu: 1500)
        link.kind = kind
        link.peerIndex = peer
        link.peerNamespace = namespace
        link.master = master
        return link
    }

    let host = [link(1, "lo", kind: nil), link(2, "eth0", kind: nil), link(7, "ve-box", kind: "veth", peer: 2, namespace: 3),
                link(8, "vethother", kind: "veth", peer: 2, namespace: 4), link(9, "wg0", kind: "wireguard")]
    let lo = link(1, "lo", kind: nil)

    @Test func aVethToTheHostIsRouted() {
        #expect(ContainerFinder.classify(namespace: 3, inside: [lo, Self.link(2, "host0", kind: "veth", peer: 7)], hostLinks: host).state
            == .routed(interfaces: ["ve-box"]))
    }

    @Test func aNamespaceNoLinkOfOursReachesIsHeld() {
        #expect(ContainerFinder.classify(namespace: nil, inside: [], hostLinks: host).state == .held(why: "no interface of it reaches the host"))
    }

    @Test func anyOtherInterfaceKeepsItHeld() {
        let macvlan = Self.link(3, "mv0", kind: "macvlan", peer: 2)
        #expect(ContainerFinder.classify(namespace: 3, inside: [lo, Self.link(2, "host0", kind: "veth", peer: 7), macvlan], hostLinks: host).state
            == .held(why: "its interface mv0 (macvlan) does not lead to the host"))
        // A veth whose other end is in a third namespace (index 2 there is not ours).
        #expect(ContainerFinder.classify(namespace: 3, inside: [lo, Self.link(5, "side", kind: "veth", peer: 2)], hostLinks: host).state
            == .held(why: "its interface side (veth) does not lead to the host"))
        // A TAP beside a veth: neither routed nor relayed alone.
        #expect(ContainerFinder.classify(namespace: 3, inside: [lo, Self.link(2, "host0", kind: "veth", peer: 7), Self.link(3, "tap0", kind: "tun")], hostLinks: host).state
            == .held(why: "its interface tap0 (tun) does not lead to the host"))
        // A macvtap writes to its lower device, not to a descriptor.
        #expect(ContainerFinder.classify(namespace: 3, inside: [lo, Self.link(3, "tap0", kind: "tun"), Self.link(2, "mvt0", kind: "macvtap", peer: 2)], hostLinks: host).state
            == .held(why: "its interface mvt0 (macvtap) does not lead to the host"))
        #expect(ContainerFinder.classify(namespace: 3, inside: [lo], hostLinks: host).state == .held(why: "it has no interface but loopback"))
    }

    /// slirp4netns's tap0, pasta's tap named after the host's interface, one more TUN: each is
    /// read by a process, which alone sends on what it reads.
    @Test func tunAndTapDevicesAloneAreRelayed() {
        let found = ContainerFinder.classify(namespace: 5, inside: [Self.link(3, "tun1", kind: "tun"), lo, Self.link(2, "tap0", kind: "tun")], hostLinks: host)
        #expect(found.state == .relayed(interfaces: ["tap0", "tun1"]) && found.bridges.isEmpty)
        #expect(ContainerFinder.classify(namespace: nil, inside: [lo, Self.link(2, "tap0", kind: "tun")], hostLinks: host).state
            == .held(why: "no interface of it reaches the host"))
    }

    @Test func aBridgePortIsRoutedWithItsBridge() {
        var bridged = host + [Self.link(10, "podman0", kind: "bridge"), Self.link(11, "bond0", kind: "bond")]
        bridged[2].master = 10
        let found = ContainerFinder.classify(namespace: 3, inside: [lo, Self.link(2, "host0", kind: "veth", peer: 7)], hostLinks: bridged)
        #expect(found.state == .routed(interfaces: ["ve-box"]) && found.bridges == ["ve-box": "podman0"])
        bridged[2].master = 11
        #expect(ContainerFinder.classify(namespace: 3, inside: [lo, Self.link(2, "host0", kind: "veth", peer: 7)], hostLinks: bridged).state
            == .held(why: "its veth's host end ve-box is enslaved to a device that is not a bridge"))
    }
}
