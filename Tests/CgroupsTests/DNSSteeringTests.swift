import Addresses
import Cgroups
import Descriptors
import Glibc
import NetTestSupport
import SocketPrograms
import Testing

/// The DNS steering program against the kernel, in a network namespace of the test's own,
/// routed as vpnd's rules will route a member's queries: marked UDP and TCP to port 53 go
/// into local delivery on `lo` with the profile's source address (127.77.1.5 or
/// fd7f:4d::105, key 0x105), whatever address they asked. What arrives where shows that the program hands such a query to the
/// profile's proxy socket and nothing else, that the proxy's answer from the address asked
/// reaches the client, that what is not ours goes by the namespace's plain lookup, that a
/// profile without a proxy loses its queries rather than giving them to another socket
/// bound to port 53, and that the program goes with its link.
@Suite(.serialized) struct DNSSteeringTests {
    /// 127.77.1.5: a program that took the key from the last byte alone would find no proxy.
    static let key: UInt32 = 0x0105
    static let mark: UInt32 = 0x100
    static let asked = Endpoint(address: IPAddress("192.0.2.53")!, port: 53)
    static var source: IPAddress { DNSSteering.address(of: key) }
    static let asked6 = Endpoint(address: IPAddress("2001:db8::53")!, port: 53)
    static var source6: IPAddress { DNSSteering.address(of: key, ipv6: true) }

    @Test func aProfilesQueriesReachItsProxyAndItsAnswersTheClient() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Self.namespace(cleanup)
        let link = try net.within { try DNSSteeringLink(capacity: 1024) }
        let proxy = try UDP.open(in: net, bind: Endpoint(address: Self.source, port: 53), transparent: true)
        let wildcard = try UDP.open(in: net, bind: Endpoint(address: .v4(0), port: 53))
        try link.set(key: Self.key, socket: proxy)
        #expect(throws: SocketProgramError.self, "127.77.0.0 names no profile") { try link.set(key: 0, socket: proxy) }
        #expect { try link.set(key: link.capacity, socket: proxy) } throws: { ($0 as? SocketProgramError)?.code == E2BIG }

        let unconnected = try UDP.open(in: net, mark: Self.mark)
        try UDP.send(unconnected, "query-1", to: Self.asked)
        let first = try #require(try UDP.receive(proxy))
        #expect(first.payload == "query-1")
        #expect(first.destination == Self.asked.address, "the address asked, in IP_PKTINFO")
        #expect(first.sender == Endpoint(address: Self.source, port: UDP.localName(unconnected).port), "the profile's source")
        try UDP.send(proxy, "answer-1", to: first.sender, from: Self.asked.address)
        let firstAnswer = try #require(try UDP.receive(unconnected))
        #expect(firstAnswer.payload == "answer-1" && firstAnswer.sender == Self.asked, "answered by the address asked: \(firstAnswer)")

        let connected = try UDP.open(in: net, mark: Self.mark)
        try UDP.connect(connected, to: Self.asked)
        #expect(UDP.localName(connected).address == Self.source)
        #expect(UDP.peerName(connected) == Self.asked)
        try UDP.send(connected, "query-2")
        let second = try #require(try UDP.receive(proxy))
        #expect(second.payload == "query-2" && second.destination == Self.asked.address)
        #expect(second.sender == UDP.localName(connected))
        try UDP.send(proxy, "answer-2", to: second.sender, from: Self.asked.address)
        let secondAnswer = try #require(try UDP.receive(connected))
        #expect(secondAnswer.payload == "answer-2" && secondAnswer.sender == Self.asked)

        #expect(try UDP.receive(wildcard, waiting: 200) == nil, "the socket on 0.0.0.0:53 got none of them")

        // Not ours: an unmarked query to a local address stays in the main table and comes
        // from 127.0.0.1; the program leaves it to the plain lookup.
        let unmarked = try UDP.open(in: net)
        try UDP.send(unmarked, "query-3", to: Endpoint(address: IPAddress("127.0.0.1")!, port: 53))
        let third = try #require(try UDP.receive(wildcard))
        #expect(third.payload == "query-3" && third.sender.address == IPAddress("127.0.0.1"))
        #expect(try UDP.receive(proxy, waiting: 200) == nil)
    }

    @Test func withoutItsProxyAProfileLosesItsQueriesUntilTheLinkGoes() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Self.namespace(cleanup)
        var link: DNSSteeringLink? = try net.within { try DNSSteeringLink(capacity: 1024) }
        let proxy = try UDP.open(in: net, bind: Endpoint(address: Self.source, port: 53), transparent: true)
        let wildcard = try UDP.open(in: net, bind: Endpoint(address: .v4(0), port: 53))
        let client = try UDP.open(in: net, mark: Self.mark)
        let connected = try UDP.open(in: net, mark: Self.mark)
        try UDP.connect(connected, to: Self.asked)
        func ask(_ payload: String, connected viaConnected: Bool = false) throws {
            if viaConnected { try UDP.send(connected, payload) } else { try UDP.send(client, payload, to: Self.asked) }
        }
        func received(at socket: borrowing FileDescriptor) throws -> String? { try UDP.receive(socket, waiting: 300)?.payload }

        try link!.set(key: Self.key, socket: proxy)
        try ask("before")
        #expect(try received(at: proxy) == "before")
        #expect(try received(at: wildcard) == nil)
        try ask("before-connected", connected: true)
        #expect(try received(at: proxy) == "before-connected")
        #expect(try received(at: wildcard) == nil)

        link!.remove(key: Self.key)
        var unclaimed = try Self.unclaimed(net)
        try ask("removed")
        try ask("removed-connected", connected: true)
        #expect(try received(at: proxy) == nil)
        #expect(try received(at: wildcard) == nil, "dropped, not given to 0.0.0.0:53")
        #expect(try Self.unclaimed(net) == unclaimed + 2, "the lookup ended without a socket, for both")
        // Nor does the client hear of it: the kernel sends no port unreachable (it would come
        // from the address asked, none of the namespace's own), so a stub resolver waits
        // for its timeout.
        #expect(try UDP.receive(connected, waiting: 300) == nil)

        try link!.set(key: Self.key, socket: proxy)
        try ask("again")
        #expect(try received(at: proxy) == "again", "the same key, set again")
        #expect(try received(at: wildcard) == nil)

        // A socket in the map that cannot take a UDP query: the assignment fails, and the
        // query goes nowhere.
        let listener = try net.within { () throws -> Int32 in try FileDescriptor.socket(AF_INET, Int32(SOCK_STREAM.rawValue)).release() }
        let tcp = FileDescriptor(adopting: listener)
        #expect(listen(tcp.raw, 1) == 0)
        try link!.set(key: Self.key, socket: tcp)
        unclaimed = try Self.unclaimed(net)
        try ask("to-tcp")
        #expect(try received(at: proxy) == nil)
        #expect(try received(at: wildcard) == nil, "a socket that refuses it: dropped")
        #expect(try Self.unclaimed(net) == unclaimed + 1)

        // The proxy's last descriptor closed: the kernel takes the socket out of the map.
        try link!.set(key: Self.key, socket: proxy)
        proxy.close()
        unclaimed = try Self.unclaimed(net)
        try ask("closed")
        #expect(try received(at: wildcard) == nil, "the proxy gone: dropped")
        #expect(try Self.unclaimed(net) == unclaimed + 1)

        link = nil
        try ask("unlinked")
        #expect(try received(at: wildcard) == "unlinked", "the program went with its link: the namespace's plain lookup again")
    }

    /// IPv6, as vpnd sets it up: one socket a family on its prefix's first address, both
    /// in their maps at the profile's key. A query from fd7f:4d::105 (on `lo`: an IPv6
    /// route's source must be one of the host's addresses) reaches the IPv6 socket, its
    /// answer the client from the address asked; the IPv4 socket cannot take it, and the
    /// query is then dropped, as one with no socket at all, while IPv4 goes on.
    @Test func anIPv6QueryReachesTheIPv6ProxyAndNothingElse() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Self.namespace(cleanup)
        let link = try net.within { try DNSSteeringLink(capacity: 1024) }
        let proxy = try UDP.open(in: net, bind: Endpoint(address: DNSSteering.prefix.address, port: 53), transparent: true)
        let proxy6 = try UDP.open(in: net, ipv6: true, bind: Endpoint(address: DNSSteering.prefix6.address, port: 53), transparent: true)
        // Dual-stack: it would take either family's query the program leaves to the lookup.
        let wildcard = try UDP.open(in: net, ipv6: true, bind: Endpoint(address: .v6(0, 0), port: 53))
        try link.set(key: Self.key, socket: proxy)
        try link.set(key: Self.key, socket: proxy6, ipv6: true)

        let unconnected = try UDP.open(in: net, ipv6: true, mark: Self.mark)
        try UDP.send(unconnected, "query-1", to: Self.asked6)
        let first = try #require(try UDP.receive(proxy6))
        #expect(first.payload == "query-1" && first.destination == Self.asked6.address, "\(first)")
        #expect(first.sender == Endpoint(address: Self.source6, port: UDP.localName(unconnected).port), "the profile's IPv6 source")
        try UDP.send(proxy6, "answer-1", to: first.sender, from: Self.asked6.address)
        let firstAnswer = try #require(try UDP.receive(unconnected))
        #expect(firstAnswer.payload == "answer-1" && firstAnswer.sender == Self.asked6, "answered by the address asked: \(firstAnswer)")

        let connected = try UDP.open(in: net, ipv6: true, mark: Self.mark)
        try UDP.connect(connected, to: Self.asked6)
        #expect(UDP.localName(connected).address == Self.source6)
        try UDP.send(connected, "query-2")
        let second = try #require(try UDP.receive(proxy6))
        #expect(second.payload == "query-2" && second.destination == Self.asked6.address && second.sender == UDP.localName(connected))
        try UDP.send(proxy6, "answer-2", to: second.sender, from: Self.asked6.address)
        let secondAnswer = try #require(try UDP.receive(connected))
        #expect(secondAnswer.payload == "answer-2" && secondAnswer.sender == Self.asked6)

        let client = try UDP.open(in: net, mark: Self.mark)
        try UDP.send(client, "query-3", to: Self.asked)
        #expect(try UDP.receive(proxy)?.payload == "query-3", "IPv4 to the IPv4 socket, at the same key")
        #expect(try UDP.receive(proxy6, waiting: 200) == nil)
        #expect(try UDP.receive(wildcard, waiting: 200) == nil, "the socket on [::]:53 got none of them")

        // The IPv4 socket in the IPv6 map: the assignment fails, the query goes nowhere.
        try link.set(key: Self.key, socket: proxy, ipv6: true)
        var unclaimed = try Self.unclaimed(net, ipv6: true)
        try UDP.send(unconnected, "to-ipv4-socket", to: Self.asked6)
        #expect(try UDP.receive(proxy, waiting: 300) == nil)
        #expect(try UDP.receive(wildcard, waiting: 300) == nil)
        #expect(try Self.unclaimed(net, ipv6: true) == unclaimed + 1)

        link.remove(key: Self.key, ipv6: true)
        unclaimed = try Self.unclaimed(net, ipv6: true)
        try UDP.send(connected, "removed")
        #expect(try UDP.receive(wildcard, waiting: 300) == nil, "dropped, not given to [::]:53")
        #expect(try Self.unclaimed(net, ipv6: true) == unclaimed + 1)
        try UDP.send(client, "query-4", to: Self.asked)
        #expect(try UDP.receive(proxy)?.payload == "query-4", "the IPv4 map is another")

        // Not ours: an unmarked query to ::1 goes by the namespace's plain lookup.
        let unmarked = try UDP.open(in: net, ipv6: true)
        try UDP.send(unmarked, "plain", to: Endpoint(address: IPAddress("::1")!, port: 53))
        #expect(try UDP.receive(wildcard)?.payload == "plain")
    }

    /// TCP, as vpnd sets it up: a transparent listener a family on its prefix's first
    /// address (its port the kernel's choice), in the TCP maps at the profile's key. A
    /// marked connection to port 53 of any address reaches it, the accepted connection has
    /// the address asked as its own (and answers from it), the client sees that address as
    /// its peer, and a listener on 0.0.0.0:53 or [::]:53 gets nothing. Without the key the
    /// SYN meets no socket (the input hook then refuses it: DNSRouting), never the other
    /// listener.
    @Test func aProfilesTCPQueriesReachItsListener() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Self.namespace(cleanup)
        let link = try net.within { try DNSSteeringLink(capacity: 1024) }
        let listener = try TCP.listen(in: net, on: Endpoint(address: DNSSteering.prefix.address, port: 0), transparent: true)
        let listener6 = try TCP.listen(in: net, on: Endpoint(address: DNSSteering.prefix6.address, port: 0), transparent: true)
        let wildcard = try TCP.listen(in: net, on: Endpoint(address: .v6(0, 0), port: 53))
        try link.set(key: Self.key, socket: listener, tcp: true)
        try link.set(key: Self.key, socket: listener6, ipv6: true, tcp: true)
        for (asked, source, steered) in [(Self.asked, Self.source, listener.raw), (Self.asked6, Self.source6, listener6.raw)] {
            let client = try TCP.connect(in: net, to: asked, mark: Self.mark)
            #expect(UDP.peerName(client) == asked && UDP.localName(client).address == source, "the client sees the address it asked")
            guard let accepted = TCP.accept(steered) else {
                Issue.record("the profile's listener took nothing for \(asked)")
                continue
            }
            #expect(UDP.localName(accepted) == asked, "the connection's own address is the one asked")
            #expect(UDP.peerName(accepted) == UDP.localName(client))
            try TCP.exchange(from: client, to: accepted, "query")
            try TCP.exchange(from: accepted, to: client, "answer")
        }
        #expect(!TCP.pending(wildcard.raw), "the listener on [::]:53 got none")

        link.remove(key: Self.key, tcp: true)
        #expect(throws: SystemError.self, "no socket for the SYN") { try TCP.connect(in: net, to: Self.asked, mark: Self.mark, seconds: 1) }
        #expect(!TCP.pending(wildcard.raw), "nor the listener on [::]:53")
        #expect(!TCP.pending(listener.raw))
    }

    /// The namespace's UDP datagrams no socket took (Udp NoPorts in /proc/net/snmp, or
    /// Udp6NoPorts in /proc/net/snmp6).
    static func unclaimed(_ net: NetworkNamespace, ipv6: Bool = false) throws -> Int {
        if ipv6 {
            let line = try net.run(["cat", "/proc/net/snmp6"]).split(separator: "\n").map { $0.split(whereSeparator: \.isWhitespace) }.first { $0.first == "Udp6NoPorts" }
            guard let line, line.count == 2, let count = Int(line[1]) else { throw TestEnvironmentError("no Udp6NoPorts in /proc/net/snmp6") }
            return count
        }
        let udp = try net.run(["cat", "/proc/net/snmp"]).split(separator: "\n").filter { $0.hasPrefix("Udp: ") }.map { $0.split(separator: " ") }
        guard udp.count == 2, let column = udp[0].firstIndex(of: "NoPorts"), let count = Int(udp[1][column]) else {
            throw TestEnvironmentError("no Udp NoPorts in /proc/net/snmp")
        }
        return count
    }

    /// Marked UDP and TCP to port 53 go by table 100 into local delivery on `lo`, from the
    /// profile's source, in both families. The namespace has no default route: nothing
    /// else leaves.
    static func namespace(_ cleanup: Cleanup) throws -> NetworkNamespace {
        let net = try NetworkNamespace("vxds\(uniqueTag())", cleanup: cleanup)
        try net.run(["ip", "-6", "address", "add", "\(source6)/128", "dev", "lo", "nodad"])
        for (family, destination, source) in [("-4", "0.0.0.0/0", source), ("-6", "::/0", source6)] {
            try net.run(["ip", family, "route", "add", "local", destination, "dev", "lo", "src", "\(source)", "table", "100"])
            for transport in ["udp", "tcp"] {
                try net.run(["ip", family, "rule", "add", "pref", "10", "fwmark", String(mark), "ipproto", transport, "dport", "53", "lookup", "100"])
            }
        }
        return net
    }
}

/// What a UDP socket read: from whom, to which address (IP_PKTINFO).
private struct Datagram: Equatable, CustomStringConvertible {
    var payload: String
    var sender: Endpoint
    var destination: IPAddress?
    var description: String { "\(payload) from \(sender) to \(destination.map(String.init(describing:)) ?? "?")" }
}

/// UDP sockets of the test namespace, of either family, with the few calls the test makes
/// on them.
private enum UDP {
    static let ipPacketInfo: Int32 = 8 // IP_PKTINFO
    static let ipTransparent: Int32 = 19 // IP_TRANSPARENT
    static let ipv6ReceivePacketInfo: Int32 = 49 // IPV6_RECVPKTINFO
    static let ipv6PacketInfo: Int32 = 50 // IPV6_PKTINFO
    static let ipv6Transparent: Int32 = 75 // IPV6_TRANSPARENT
    static let socketMark: Int32 = 36 // SO_MARK

    /// A socket made inside `net` (it stays there), receiving the destination of each
    /// datagram; bound beside others on its port (SO_REUSEADDR) if `bind` is given.
    static func open(in net: NetworkNamespace, ipv6: Bool = false, bind endpoint: Endpoint? = nil, transparent: Bool = false,
                     mark: UInt32? = nil) throws -> FileDescriptor {
        let raw = try net.within { () throws -> Int32 in try FileDescriptor.socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue)).release() }
        let socket = FileDescriptor(adopting: raw)
        if ipv6 {
            try option(socket, Int32(IPPROTO_IPV6), ipv6ReceivePacketInfo, 1, "IPV6_RECVPKTINFO")
            if transparent { try option(socket, Int32(IPPROTO_IPV6), ipv6Transparent, 1, "IPV6_TRANSPARENT") }
        } else {
            try option(socket, Int32(IPPROTO_IP), ipPacketInfo, 1, "IP_PKTINFO")
            if transparent { try option(socket, Int32(IPPROTO_IP), ipTransparent, 1, "IP_TRANSPARENT") }
        }
        if let mark { try option(socket, SOL_SOCKET, socketMark, Int32(bitPattern: mark), "SO_MARK") }
        if let endpoint {
            try option(socket, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR")
            guard endpoint.withSockaddr({ Glibc.bind(socket.raw, $0, $1) }) == 0 else { throw SystemError("bind \(endpoint)") }
        }
        return socket
    }

    static func connect(_ socket: borrowing FileDescriptor, to endpoint: Endpoint) throws {
        guard endpoint.withSockaddr({ Glibc.connect(socket.raw, $0, $1) }) == 0 else { throw SystemError("connect \(endpoint)") }
    }

    /// To `destination` (else the connected peer), from `source` (else the route's) as the
    /// packet info's `ipi_spec_dst` or `ipi6_addr`.
    static func send(_ socket: borrowing FileDescriptor, _ payload: String, to destination: Endpoint? = nil, from source: IPAddress? = nil) throws {
        var bytes = Array(payload.utf8)
        var address = sockaddr_in6()
        let addressLength = destination.map { $0.store(into: &address) } ?? 0
        // One cmsghdr (16 bytes) and its struct in_pktinfo (12) or in6_pktinfo (20), padded.
        var control = [UInt8](repeating: 0, count: 40)
        var controlLength = 0
        if let source {
            let ipv4 = source.isIPv4
            controlLength = ipv4 ? 32 : 40
            control.withUnsafeMutableBytes {
                $0.storeBytes(of: ipv4 ? 28 : 36, toByteOffset: 0, as: Int.self)
                $0.storeBytes(of: Int32(ipv4 ? IPPROTO_IP : IPPROTO_IPV6), toByteOffset: 8, as: Int32.self)
                $0.storeBytes(of: ipv4 ? ipPacketInfo : ipv6PacketInfo, toByteOffset: 12, as: Int32.self)
            }
            // in_pktinfo's ipi_spec_dst is at 4; in6_pktinfo's address first.
            control.replaceSubrange((ipv4 ? 20 : 16)..<((ipv4 ? 20 : 16) + source.bytes.count), with: source.bytes)
        }
        let sent = bytes.withUnsafeMutableBytes { payload in
            control.withUnsafeMutableBytes { control in
                withUnsafeMutablePointer(to: &address) { address in
                    var vector = iovec(iov_base: payload.baseAddress, iov_len: payload.count)
                    return withUnsafeMutablePointer(to: &vector) { vector in
                        var message = msghdr()
                        if destination != nil {
                            message.msg_name = UnsafeMutableRawPointer(address)
                            message.msg_namelen = addressLength
                        }
                        message.msg_iov = vector
                        message.msg_iovlen = 1
                        if controlLength > 0 {
                            message.msg_control = control.baseAddress
                            message.msg_controllen = controlLength
                        }
                        return sendmsg(socket.raw, &message, 0)
                    }
                }
            }
        }
        guard sent == bytes.count else { throw SystemError("sendmsg \(payload)") }
    }

    /// The next datagram within `waiting` milliseconds, or nil; a pending error (port
    /// unreachable on a connected socket) is thrown.
    static func receive(_ socket: borrowing FileDescriptor, waiting: Int32 = 2000) throws(SystemError) -> Datagram? {
        var ready = pollfd(fd: socket.raw, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, waiting) >= 0 else { throw SystemError("poll") }
        guard ready.revents != 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 512)
        var control = [UInt8](repeating: 0, count: 64)
        var sender = sockaddr_storage()
        var senderLength = socklen_t(0)
        var controlLength = 0
        let count = bytes.withUnsafeMutableBytes { payload in
            control.withUnsafeMutableBytes { control in
                withUnsafeMutablePointer(to: &sender) { sender in
                    var vector = iovec(iov_base: payload.baseAddress, iov_len: payload.count)
                    return withUnsafeMutablePointer(to: &vector) { vector in
                        var message = msghdr()
                        message.msg_name = UnsafeMutableRawPointer(sender)
                        message.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                        message.msg_iov = vector
                        message.msg_iovlen = 1
                        message.msg_control = control.baseAddress
                        message.msg_controllen = control.count
                        let count = recvmsg(socket.raw, &message, Int32(MSG_DONTWAIT))
                        controlLength = message.msg_controllen
                        senderLength = message.msg_namelen
                        return count
                    }
                }
            }
        }
        guard count >= 0 else { throw SystemError("recvmsg") }
        var destination: IPAddress?
        var offset = 0
        // struct cmsghdr: a size_t length (header included), level, type, then the data
        // at 16; each padded to 8 bytes. in_pktinfo: ifindex, ipi_spec_dst, ipi_addr;
        // in6_pktinfo: the address, then the ifindex.
        while offset + 16 <= controlLength {
            let length = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int.self) }
            let level = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self) }
            let type = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self) }
            if level == Int32(IPPROTO_IP), type == ipPacketInfo, length >= 28 {
                destination = IPAddress(bytes: control[(offset + 24)..<(offset + 28)])
            } else if level == Int32(IPPROTO_IPV6), type == ipv6PacketInfo, length >= 36 {
                destination = IPAddress(bytes: control[(offset + 16)..<(offset + 32)])
            }
            guard length >= 16 else { break }
            offset += (length + 7) & ~7
        }
        return Datagram(payload: String(decoding: bytes.prefix(count), as: UTF8.self), sender: (try? Endpoint(sockaddr: &sender, length: senderLength)) ?? unnamed, destination: destination)
    }

    static func localName(_ socket: borrowing FileDescriptor) -> Endpoint { name(socket, Endpoint.local(of:)) }
    static func peerName(_ socket: borrowing FileDescriptor) -> Endpoint { name(socket, Endpoint.peer(of:)) }

    /// What a test sees where a socket has no address: it matches no expected endpoint.
    private static let unnamed = Endpoint(address: .v4(0), port: 0)

    private static func name(_ socket: borrowing FileDescriptor, _ call: (Int32) -> Endpoint?) -> Endpoint { call(socket.raw) ?? unnamed }

    private static func option(_ socket: borrowing FileDescriptor, _ level: Int32, _ name: Int32, _ value: Int32, _ what: String) throws {
        var value = value
        guard setsockopt(socket.raw, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else { throw SystemError("setsockopt \(what)") }
    }
}

/// TCP sockets of the test namespace, with the few calls the TCP test makes on them.
private enum TCP {
    static func socket(in net: NetworkNamespace, ipv6: Bool) throws -> FileDescriptor {
        FileDescriptor(adopting: try net.within { () throws -> Int32 in try FileDescriptor.socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue)).release() })
    }

    static func listen(in net: NetworkNamespace, on endpoint: Endpoint, transparent: Bool = false) throws -> FileDescriptor {
        let ipv6 = !endpoint.address.isIPv4
        let socket = try socket(in: net, ipv6: ipv6)
        var on: Int32 = 1
        setsockopt(socket.raw, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if transparent {
            guard setsockopt(socket.raw, ipv6 ? Int32(IPPROTO_IPV6) : Int32(IPPROTO_IP), ipv6 ? UDP.ipv6Transparent : UDP.ipTransparent,
                             &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else { throw SystemError("setsockopt IP_TRANSPARENT") }
        }
        guard endpoint.withSockaddr({ Glibc.bind(socket.raw, $0, $1) }) == 0 else { throw SystemError("bind \(endpoint)") }
        guard Glibc.listen(socket.raw, 8) == 0 else { throw SystemError("listen") }
        return socket
    }

    /// Connected within `seconds`, or the error (a timeout is EINPROGRESS or EAGAIN).
    static func connect(in net: NetworkNamespace, to endpoint: Endpoint, mark: UInt32, seconds: Int = 3) throws -> FileDescriptor {
        let socket = try socket(in: net, ipv6: !endpoint.address.isIPv4)
        var value = mark
        guard setsockopt(socket.raw, SOL_SOCKET, UDP.socketMark, &value, socklen_t(MemoryLayout<UInt32>.size)) == 0 else { throw SystemError("SO_MARK") }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(socket.raw, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try UDP.connect(socket, to: endpoint)
        return socket
    }

    /// The next connection within `waiting` milliseconds, or nil.
    static func accept(_ listener: Int32, waiting: Int32 = 2000) -> FileDescriptor? {
        var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, waiting) > 0 else { return nil }
        let accepted = Glibc.accept(listener, nil, nil)
        return accepted >= 0 ? FileDescriptor(adopting: accepted) : nil
    }

    /// Whether a connection waits on `listener` within `waiting` milliseconds.
    static func pending(_ listener: Int32, waiting: Int32 = 200) -> Bool {
        var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, waiting) > 0
    }

    static func exchange(from sender: borrowing FileDescriptor, to receiver: borrowing FileDescriptor, _ text: String) throws {
        let bytes = Array(text.utf8)
        guard send(sender.raw, bytes, bytes.count, 0) == bytes.count else { throw SystemError("send \(text)") }
        var ready = pollfd(fd: receiver.raw, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 2000) > 0 else { throw SystemError("nothing arrived for \(text)", code: ETIMEDOUT) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = recv(receiver.raw, &buffer, buffer.count, 0)
        guard count == bytes.count, Array(buffer.prefix(count)) == bytes else { throw SystemError("received other than \(text)", code: EIO) }
    }
}
