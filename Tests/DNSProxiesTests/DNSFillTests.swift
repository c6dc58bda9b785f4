import Addresses
@testable import DNSProxies
import DNS
import CLinux
import Descriptors
import DomainNames
import Glibc
import NetTestSupport
import Nftables
import Plan
import Policy
import ServiceSupport
import Testing
import TrustedFiles
import Applying
import DaemonLoop

/// A DNS answer for a route.domains name fills the profile's set before the member gets
/// it, and an answer whose elements the kernel refused is not given (SERVFAIL): vpnd's DNS
/// service against the fake applier, its sockets and steering program in a namespace of its
/// own (the member's query comes from the profile's steering address with its mark, as the
/// routing would send it; the marks take CAP_NET_ADMIN, the program CAP_BPF).
@Suite(.serialized) struct DNSFillTests {
    struct Outcome {
        var answer: DNSMessage?
        /// The element batches the applier had seen when the answer arrived.
        var batchesAtAnswer: Int?
    }

    static func ask(_ applier: FakeKernelApplier) throws -> Outcome {
        let policy = try Policy.parse([PolicySource(path: "/p/10.toml", text: """
            [profile.work]
            tunnel.interface = "wg0"
            dns = ["127.0.0.1"]
            route.domains = ["*.corp.example"]
            """)], resolver: SystemNameResolver())
        let profile = try #require(policy.profiles.first)
        try applier.apply(Planner.plan(policy, facts: RuntimeFacts()))
        let loop = EventLoop()
        let service = DNSService(applier: applier, log: Log(minimum: .error), steering: try DNSSteeringPoint())
        service.register(on: loop)
        defer { service.closeAll() }
        service.configure(policy, resolvers: [:])

        // The upstream resolver: 192.0.2.44 for any name, TTL 300.
        let upstream = try udpSocket(bind: Endpoint(address: .v4(0x7f00_0001), port: 53))
        defer { close(upstream) }
        loop.watch(DescriptorNumber(borrowing: upstream)) { _ in
            var buffer = [UInt8](repeating: 0, count: 4096)
            var from = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(upstream, &buffer, buffer.count, 0, $0, &length) } }
            guard count > 0, var message = try? DNSMessage(parsing: Array(buffer.prefix(count))), let question = message.questions.first else { return }
            message.header.isResponse = true
            message.answers = [DNSRecord(name: question.name, ttl: 300, data: .address(IPAddress("192.0.2.44")!))]
            let bytes = message.encoded()
            _ = withUnsafePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(upstream, bytes, bytes.count, 0, $0, length) } }
        }
        // A member's query, from where the routing would deliver it.
        var outcome = Outcome()
        let client = try udpSocket(bind: Endpoint(address: DNSRouting.steeringAddress(profile, ipv6: false), port: 0))
        var mark = profile.mark.value
        #expect(setsockopt(client, SOL_SOCKET, vx_so_mark(), &mark, socklen_t(MemoryLayout<UInt32>.size)) == 0)
        defer { close(client) }
        loop.watch(DescriptorNumber(borrowing: client)) { _ in
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(client, &buffer, buffer.count, 0)
            outcome.answer = count > 0 ? try? DNSMessage(parsing: Array(buffer.prefix(count))) : nil
            outcome.batchesAtAnswer = applier.elementBatches.count
            loop.stop()
        }
        var query = DNSMessage(header: DNSHeader(id: 7), questions: [DNSQuestion(name: DomainName("host.corp.example")!, type: .a)])
        query.header.recursionDesired = true
        let bytes = query.encoded()
        let sent = Endpoint(address: .v4(0x7f00_0035), port: 53).withSockaddr { sendto(client, bytes, bytes.count, 0, $0, $1) }
        #expect(sent == bytes.count)
        _ = loop.after(.seconds(5)) { loop.stop() }
        try loop.run()
        return outcome
    }

    static func udpSocket(bind local: Endpoint?) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        if let local, local.withSockaddr({ Glibc.bind(fd, $0, $1) }) != 0 { throw SystemError("bind") }
        return fd
    }

    @Test func theSetIsFilledBeforeTheAnswer() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())df", cleanup: cleanup)
        let applier = FakeKernelApplier()
        let outcome = try namespace.within { try Self.ask(applier) }
        let answer = try #require(outcome.answer, "no answer")
        #expect(answer.answers.map(\.data) == [.address(IPAddress("192.0.2.44")!)])
        #expect(outcome.batchesAtAnswer == 1, "the element was acknowledged before the answer left")
        let batch = try #require(applier.elementBatches.first)
        #expect(Array(batch.keys) == [ProfileObjectNames("work").routeDomainSet(ipv4: true)])
        #expect(batch.values.first?.map(\.key) == [.prefix(IPPrefix("192.0.2.44/32")!)])
        #expect((batch.values.first?.first?.timeout ?? 0) >= 300)
    }

    @Test func anAnswerWhoseElementsTheKernelRefusedIsNotGiven() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())dr", cleanup: cleanup)
        let applier = FakeKernelApplier()
        applier.failNextElements = SystemError("nft: adding elements", code: ENOSPC)
        let outcome = try namespace.within { try Self.ask(applier) }
        let answer = try #require(outcome.answer, "no answer")
        #expect(answer.header.responseCode == .serverFailure)
        #expect(answer.answers.isEmpty, "the address is not given")
        let held = try applier.elements(of: ProfileObjectNames("work").routeDomainSet(ipv4: true), ipv4: true)
        #expect(applier.elementBatches.count == 1 && held.isEmpty)
    }
}
