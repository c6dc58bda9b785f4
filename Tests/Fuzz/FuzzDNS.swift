import Addresses
import DNS
import DomainNames
import Monotonic
import Names

/// libFuzzer entry for the DNS core (scripts/fuzz builds it with -sanitize=fuzzer,address).
/// Every input is, in turn: a message to parse (whatever is accepted must encode and parse
/// back to the same message, and its chain must be readable), the message the proxy's own
/// error reply answers, a domain pattern as a policy would write it, TCP bytes to de-frame,
/// and, for a proxy with domain lists, the upstream's answer to a query in flight (its ID
/// set to the one the proxy chose, so mutations of the seed answers reach the chain and the
/// set filling) and a member's query. Nothing may crash, hang or leak, and what the proxy
/// hands out must be what it promises: replies that parse with the client's ID, elements for
/// configured sets within the timeout bounds.

/// Deterministic, so a crash reproduces from its input alone.
private struct FuzzRandom: RandomNumberGenerator {
    var state: UInt64 = 0x5eed
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 16
    }
}

private let servers = [DNSServer(address: .v4(0x0a40_0001)), DNSServer(address: .v4(0x0a40_0002))]
private let domainSets = [
    DNSDomainSets(patterns: [try! DomainPattern("bank.example"), try! DomainPattern("*.cdn.example")], ipv4Set: "b4", ipv6Set: "b6"),
    DNSDomainSets(patterns: [try! DomainPattern("*.corp.example")], ipv4Set: "r4", ipv6Set: "r6"),
]
private let bounds: ClosedRange<UInt32> = 60...3600
private let lists = DomainList(domainSets.map(\.patterns))
/// With tunneled sets (list 0 is the bypass list), so every answer's addresses are read.
private var proxy = try! DNSProxy<Int>(configuration: DNSProxyConfiguration(servers: servers, domainSets: domainSets,
                                                                           tunneledSets: DNSTunneledSets(bypassList: 0, ipv4Set: "t4", ipv6Set: "t6"),
                                                                           elementTimeout: bounds, maxInFlight: 64),
                                       random: FuzzRandom())
/// "bank.example A", ID 0x1234, as a stub resolver asks it; scripts/fuzz seeds answers to it.
private let question: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 4] + Array("bank".utf8) + [7] + Array("example".utf8) + [0, 0, 1, 0, 1]
private var clock: UInt64 = 1_000_000_000
private var actions: [DNSProxyAction<Int>] = []

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // A member's varlink call to its profile's names server, as nss-resolve would frame it.
    _ = ResolveCall.read(bytes)
    if let message = try? DNSMessage(parsing: bytes) {
        guard let again = try? DNSMessage(parsing: message.encoded()), again == message else {
            fatalError("a parsed message does not survive encoding: \(message)")
        }
        _ = try? AnswerAddresses(response: bytes, lists: lists)
    }
    if let reply = DNSErrorReply.make(answering: bytes, code: .formatError) {
        precondition((try? DNSMessage(parsing: reply)) != nil, "an error reply that does not parse")
    }
    if let pattern = try? DomainPattern(String(decoding: bytes, as: UTF8.self)) {
        precondition((try? DomainPattern(pattern.description)) == pattern, "a pattern that does not survive printing")
        precondition(DomainList([[pattern]]).lists(matching: pattern.domain) == (pattern.scope == .exactly ? .list(0) : []))
    }
    var reader = DNSTCPReader()
    reader.append(bytes)
    while let message = reader.next() { precondition(message.count <= DNSTCPFraming.maxMessageSize) }

    clock += 1_000_000
    actions.removeAll(keepingCapacity: true)
    proxy.query(question, from: 1, over: .udp, now: MonotonicInstant(nanoseconds: clock), into: &actions)
    var answer = bytes
    if case let .forward(query, _, _)? = actions.last, answer.count >= 2 {
        answer[0] = query[0]
        answer[1] = query[1]
    }
    actions.removeAll(keepingCapacity: true)
    proxy.upstreamAnswer(answer, from: servers[size % 2], now: MonotonicInstant(nanoseconds: clock), into: &actions)
    proxy.query(bytes, from: 2, over: .tcp, now: MonotonicInstant(nanoseconds: clock), into: &actions)
    // Past both servers' timeouts: everything still in flight is retried, then answered.
    for _ in 0..<2 {
        clock += 2_100_000_000
        proxy.tick(now: MonotonicInstant(nanoseconds: clock), into: &actions)
    }
    precondition(proxy.inFlightCount == 0, "queries left in flight after every timeout")
    for action in actions {
        switch action {
        case .forward:
            break
        case let .reply(response, client, _):
            check(response, client: client)
        case let .fillThenReply(elements, response, client, _):
            check(response, client: client)
            for element in elements {
                precondition(["b4", "b6", "r4", "r6", "t4", "t6"].contains(element.set) && bounds.contains(element.timeoutSeconds), "element \(element)")
                precondition(element.address.isIPv4 == element.set.hasSuffix("4"), "an address in the other family's set")
            }
            precondition(elements.contains { $0.set.hasPrefix("b") } != elements.contains { $0.set.hasPrefix("t") },
                         "an answer both bypassed and tunneled, or neither: \(elements)")
        }
    }
    return 0
}

/// A reply parses (relayed answers were read whole first; the proxy's own replies are built
/// by the encoder) and carries the ID its client used (client 1 asked `question`).
private func check(_ response: [UInt8], client: Int) {
    guard let message = try? DNSMessage(parsing: response) else { fatalError("a reply that does not parse: \(response)") }
    if client == 1 { precondition(message.header.id == 0x1234, "a reply without the client's ID") }
}
