import Addresses
import Foundation
import Netlink
import NetTestSupport
import Testing

/// What the proxy asks of a steered TCP connection no local socket made: whether a rule
/// translated its source. A server namespace source-NATs, in its input hook, what arrives for
/// one port (as ContainerRules does for a container's DNS), not for another; a client
/// namespace holds a connection to each. Looked up by the tuple the server's socket has.
@Suite(.serialized) struct ConntrackTests {
    @Test func aConnectionSaysWhetherItsSourceWasTranslated() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let client = try NetworkNamespace("vx\(tag)cc", cleanup: cleanup)
        let server = try NetworkNamespace("vx\(tag)cs", cleanup: cleanup)
        try Command.run(["ip", "link", "add", "eth0", "netns", client.name, "type", "veth", "peer", "name", "eth0", "netns", server.name])
        for (namespace, address) in [(client, "10.0.0.1"), (server, "10.0.0.2")] {
            try namespace.run(["ip", "addr", "add", "\(address)/24", "dev", "eth0"])
            try namespace.run(["ip", "link", "set", "eth0", "up"])
        }
        try server.run(["ip", "addr", "add", "10.0.0.99/32", "dev", "lo"])
        try NftCLI.apply("""
            table ip vxct {
                chain take { type nat hook input priority 100; tcp dport 7001 snat to 10.0.0.99; }
            }
            """, in: server)
        // One process a side (each one stopped at cleanup takes its time).
        let listen = "import socket,time\nls=[socket.create_server(('10.0.0.2', p)) for p in (7001, 7002)]\nc=[l.accept() for l in ls]\ntime.sleep(60)"
        _ = try BackgroundProcess(server.enter + ["/usr/bin/python3", "-c", listen], cleanup: cleanup)
        try eventually("the listeners") { let listening = try server.run(["ss", "-ltnH"]); return listening.contains(":7001") && listening.contains(":7002") }
        let connect = "import socket,time\nc=[socket.create_connection(('10.0.0.2', p)) for p in (7001, 7002)]\ntime.sleep(60)"
        _ = try BackgroundProcess(client.enter + ["/usr/bin/python3", "-c", connect], cleanup: cleanup)
        // The server's side of each: its own address and port, and its peer's as it sees it.
        var peers: [Int: (IPAddress, UInt16)] = [:]
        try eventually("both connections") {
            for line in try server.run(["ss", "-tnH", "state", "established"]).split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count >= 4, let local = fields[2].split(separator: ":").last.flatMap({ Int($0) }),
                      let address = IPAddress(String(fields[3].split(separator: ":").first ?? "")),
                      let port = fields[3].split(separator: ":").last.flatMap({ UInt16($0) }) else { continue }
                peers[local] = (address, port)
            }
            return peers.count == 2
        }
        let translated = try #require(peers[7001]), direct = try #require(peers[7002])
        #expect(translated.0 == IPAddress("10.0.0.99") && direct.0 == IPAddress("10.0.0.1"), "the server saw \(peers)")
        try server.within {
            let conntrack = try Conntrack()
            let server = IPAddress("10.0.0.2")!
            #expect(try conntrack.tcpConnection(replyFrom: server, port: 7001, to: translated.0, port: translated.1)
                == Conntrack.Entry(originalSource: IPAddress("10.0.0.1"), sourceTranslated: true))
            #expect(try conntrack.tcpConnection(replyFrom: server, port: 7002, to: direct.0, port: direct.1)
                == Conntrack.Entry(originalSource: IPAddress("10.0.0.1"), sourceTranslated: false))
            #expect(try conntrack.tcpConnection(replyFrom: server, port: 7003, to: direct.0, port: direct.1) == nil, "none tracked")
        }
    }
}
