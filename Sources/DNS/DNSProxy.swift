import Addresses
import DomainNames
import Monotonic

/// The DNS proxy of one profile as a pure state machine (boringtun's shape): the caller
/// passes in what arrived and the time, and carries out the actions that come back; no
/// sockets, clock or randomness of its own. One proxy per profile, not one for all: each
/// profile has its own servers behind its own tunnel and its own domain lists, the caller
/// already tells profiles apart by the socket a query was redirected to, and an answer can
/// then never be matched against another profile's query.
///
/// A query is checked, given a fresh random ID (the client's is restored in the reply) and
/// forwarded; the answer is accepted only from a server it was sent to, with that ID and the
/// same question, and checked whole. If a name of its CNAME chain is in a domain list, the
/// answer's addresses come out as set elements to add before the reply is sent. With
/// tunneled sets (a profile with bypass.domains), so do the addresses of every answer for a
/// name that is not bypassed, into those sets: an address both kinds of name share then
/// stays in the tunnel, in either order of the two lookups.
///
/// A proxy with domain lists answers Firefox's canary itself (`CanaryDomain`).
public struct DNSProxy<Client: Hashable> {
    public let configuration: DNSProxyConfiguration
    public private(set) var counters = DNSProxyCounters()

    private let lists: DomainList
    private var random: any RandomNumberGenerator
    private var inFlight: InFlightQueries<Client>
    private var scan = AnswerScan()
    private var serviceTargets = ServiceTargets()
    private var shared = SharedAddresses()
    /// The server new queries go to first: moves on when it lets a query time out.
    private var preferred = 0
    private let upstreamTimeout: UInt64

    public init(configuration: DNSProxyConfiguration, random: some RandomNumberGenerator) throws(DNSProxyConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        self.random = random
        lists = DomainList(configuration.domainSets.map(\.patterns))
        inFlight = InFlightQueries(capacity: configuration.maxInFlight)
        upstreamTimeout = configuration.upstreamTimeout.nanoseconds
    }

    public var inFlightCount: Int { inFlight.count }

    /// The addresses that bypassed and other names share now (most recent first, a few).
    public func sharedAddresses(now: MonotonicInstant) -> [DNSSharedAddress] { shared.collisions(now: now) }

    /// When `tick` next has work (a query's upstream timeout), if any query is in flight.
    public mutating func nextDeadline() -> MonotonicInstant? { inFlight.nextDeadline() }

    /// A query from a member. Appends to `actions`: a forward, or a reply made here (FORMERR
    /// for a query that cannot be read, NOTIMP for opcodes other than QUERY, REFUSED with no
    /// server), and a SERVFAIL to the oldest query in flight when the table is full.
    public mutating func query(_ bytes: [UInt8], from client: Client, over transport: DNSTransport, now: MonotonicInstant,
                               into actions: inout [DNSProxyAction<Client>]) {
        expire(now: now, into: &actions)
        guard let header = DNSHeader(of: bytes) else { return drop(.unreadableQuery) }
        guard !header.isResponse else { return drop(.responseFromClient) }
        guard header.opcode == .query else {
            return fail(bytes, .notImplemented, to: client, over: transport, into: &actions)
        }
        guard let walker = try? MessageWalker(bytes), walker.questionCount == 1,
              (try? walker.walk(bytes, question: { _ in }, record: { _, _ in })) != nil else {
            return fail(bytes, .formatError, to: client, over: transport, into: &actions)
        }
        if !configuration.domainSets.isEmpty, CanaryDomain.isAsked(in: bytes), let reply = DNSErrorReply.make(answering: bytes, code: .nameError) {
            counters.canaryAnswered += 1
            return actions.append(.reply(response: reply, to: client, over: transport))
        }
        guard !configuration.servers.isEmpty else {
            return fail(bytes, .refused, to: client, over: transport, into: &actions)
        }
        if inFlight.count >= configuration.maxInFlight, let (id, oldest) = inFlight.earliest(dueBy: nil) {
            inFlight.remove(id)
            counters.evicted += 1
            fail(oldest, into: &actions)
        }
        let id = inFlight.freeID(using: &random)
        var upstream = bytes
        Wire.put16(id, into: &upstream, at: 0)
        let server = preferred
        inFlight.insert(.init(client: client, clientID: header.id, transport: transport, bytes: upstream, firstServer: server, attempts: 1, generation: 0),
                        id: id, deadline: MonotonicInstant(nanoseconds: now.nanoseconds &+ upstreamTimeout))
        counters.forwarded += 1
        actions.append(.forward(query: upstream, to: configuration.servers[server], over: transport))
    }

    /// An answer from an upstream server (`server` as the socket saw the sender). Appends a
    /// reply or a fill-then-reply for the client that asked; appends nothing when the answer
    /// is dropped (see `DNSDropReason`).
    public mutating func upstreamAnswer(_ bytes: [UInt8], from server: DNSServer, now: MonotonicInstant,
                                        into actions: inout [DNSProxyAction<Client>]) {
        expire(now: now, into: &actions)
        guard let header = DNSHeader(of: bytes) else { return drop(.malformedAnswer) }
        guard header.isResponse, let query = inFlight[header.id],
              let serverIndex = configuration.servers.firstIndex(of: server), wasAsked(query, serverIndex) else {
            return drop(.unexpectedAnswer)
        }
        guard sameQuestion(bytes, query.bytes) else { return drop(.mismatchedAnswer) }
        do {
            try scan.read(bytes, lists: lists, followChain: header.responseCode == .noError && lists.count > 0)
        } catch {
            return drop(.malformedAnswer)
        }
        inFlight.remove(header.id)
        var response = bytes
        Wire.put16(query.clientID, into: &response, at: 0)
        var lists = scan.lists
        if !serviceTargets.isEmpty {
            for name in scan.chain {
                guard let name = try? DomainName(in: bytes, at: name) else { continue }
                lists.formUnion(serviceTargets.lists(of: name, now: now))
            }
        }
        // Not bypassed: its addresses stay in the tunnel (a chain cut short still fills
        // what it has; the name is in no list that needs all of it).
        let tunneled = configuration.tunneledSets.map { !lists.contains(list: $0.bypassList) } ?? false
        guard !lists.isEmpty || tunneled else {
            counters.answered += 1
            return actions.append(.reply(response: response, to: query.client, over: query.transport))
        }
        guard lists.isEmpty || scan.chainEnd == .complete else {
            // The chain is in a list but cannot be followed to its addresses: relaying it
            // would let the client connect somewhere the sets do not cover.
            return fail(response, .serverFailure, to: query.client, over: query.transport, into: &actions)
        }
        let elements = fill(&response, lists: lists, tunneled: tunneled, now: now)
        counters.answered += 1
        actions.append(elements.isEmpty ? .reply(response: response, to: query.client, over: query.transport)
                                        : .fillThenReply(elements: elements, response: response, to: query.client, over: query.transport))
    }

    /// How often a query is sent before it is answered SERVFAIL: once to each server, and at
    /// least twice. A lone server gets a second try because one lost datagram (in a tunnel,
    /// or a resolver's full socket) must not become a SERVFAIL: a stub resolver takes that
    /// as final instead of asking again.
    static func attempts(servers: Int) -> Int { max(2, servers) }

    /// A forward the kernel refused at once (`query` as the forward action carried it): no
    /// route to the server, as while the profile's tunnel is down. The query moves on as if
    /// its server had let it time out, without the wait: to the next server, or SERVFAIL
    /// now rather than after every timeout.
    public mutating func forwardFailed(_ query: [UInt8], now: MonotonicInstant, into actions: inout [DNSProxyAction<Client>]) {
        guard let header = DNSHeader(of: query), let inFlightQuery = inFlight[header.id], inFlightQuery.bytes == query else { return }
        moveOn(header.id, inFlightQuery, now: now, into: &actions)
    }

    /// Time passing: queries whose server did not answer in time go to the next server (the
    /// same one again when there is only one), or, when every try is used, are answered
    /// SERVFAIL.
    public mutating func tick(now: MonotonicInstant, into actions: inout [DNSProxyAction<Client>]) {
        expire(now: now, into: &actions)
    }

    private mutating func expire(now: MonotonicInstant, into actions: inout [DNSProxyAction<Client>]) {
        while let (id, query) = inFlight.earliest(dueBy: now) {
            moveOn(id, query, now: now, into: &actions)
        }
    }

    /// The server last asked failed `query`: ask the next one, or answer SERVFAIL when every
    /// try is used; new queries start at the next server too.
    private mutating func moveOn(_ id: UInt16, _ query: InFlightQueries<Client>.Query, now: MonotonicInstant,
                                 into actions: inout [DNSProxyAction<Client>]) {
        let servers = configuration.servers
        let failed = (query.firstServer + query.attempts - 1) % servers.count
        if preferred == failed { preferred = (failed + 1) % servers.count }
        guard query.attempts < Self.attempts(servers: servers.count) else {
            inFlight.remove(id)
            return fail(query, into: &actions)
        }
        inFlight.rearm(id, deadline: MonotonicInstant(nanoseconds: now.nanoseconds &+ upstreamTimeout))
        counters.retried += 1
        actions.append(.forward(query: query.bytes, to: servers[(failed + 1) % servers.count], over: query.transport))
    }

    /// The set elements for the answer's addresses (and HTTPS/SVCB address hints), its TTLs
    /// lowered in place where they would outlive them: an address or service record's to the
    /// ceiling, a CNAME's of the chain to the shortest element timeout (a client that kept
    /// the CNAME longer would ask for the target's addresses directly, and the target need
    /// not be in any list). The target names of the service records are remembered for the
    /// lists as long as the records' elements live.
    private mutating func fill(_ response: inout [UInt8], lists: DomainList.Membership, tunneled: Bool, now: MonotonicInstant) -> [DNSSetElement] {
        var elements: [DNSSetElement] = []
        // Whose addresses these are, for the shared-address count: the question's name.
        let asked = configuration.tunneledSets == nil || (scan.addressRecords.isEmpty && scan.serviceRecords.isEmpty) ? nil
            : scan.chain.first.flatMap { try? DomainName(in: response, at: $0) }
        var shortest = UInt32.max
        let bounds = configuration.elementTimeout
        /// The record's timeout, its TTL lowered in the response if it outlives the ceiling.
        func timeout(of record: RecordRef) -> UInt32 {
            let ttl = Wire.effectiveTTL(record.ttl)
            if ttl > bounds.upperBound { Wire.put32(bounds.upperBound, into: &response, at: record.ttlOffset) }
            let timeout = min(max(ttl, bounds.lowerBound), bounds.upperBound)
            shortest = min(shortest, timeout)
            return timeout
        }
        func add(_ address: IPAddress, timeout: UInt32) {
            for list in lists.lists {
                let sets = configuration.domainSets[list]
                let element = DNSSetElement(set: address.isIPv4 ? sets.ipv4Set : sets.ipv6Set, address: address, timeoutSeconds: timeout)
                counters.addressesAdded[element.set, default: 0] += 1
                elements.append(element)
            }
            if tunneled, let sets = configuration.tunneledSets {
                let element = DNSSetElement(set: address.isIPv4 ? sets.ipv4Set : sets.ipv6Set, address: address, timeoutSeconds: timeout)
                counters.addressesAdded[element.set, default: 0] += 1
                elements.append(element)
            }
            if let asked {
                shared.answered(address, name: asked, bypassed: !tunneled, until: now + .seconds(Int64(timeout)), now: now)
                counters.sharedAddresses = shared.count
            }
        }
        for index in scan.addressRecords {
            let record = scan.records[index]
            add(Wire.address(response, record.data), timeout: timeout(of: record))
        }
        for index in scan.serviceRecords {
            let record = scan.records[index]
            let seconds = timeout(of: record)
            for hint in ServiceHints.addresses(response, record.data) { add(hint, timeout: seconds) }
            if let offset = ServiceHints.targetName(response, record.data), let target = try? DomainName(in: response, at: offset) {
                serviceTargets.remember(target, lists: lists, until: now + .seconds(Int64(seconds)), now: now)
            }
        }
        for index in scan.cnameRecords where Wire.effectiveTTL(scan.records[index].ttl) > shortest {
            Wire.put32(shortest, into: &response, at: scan.records[index].ttlOffset)
        }
        return elements
    }

    private func wasAsked(_ query: InFlightQueries<Client>.Query, _ server: Int) -> Bool {
        let count = configuration.servers.count
        return (server - query.firstServer + count) % count < query.attempts
    }

    /// One question in the answer, the same as the query's (names compared without case).
    private func sameQuestion(_ answer: [UInt8], _ query: [UInt8]) -> Bool {
        guard (try? Wire.u16(answer, 4)) == 1,
              let (theirs, _) = try? MessageWalker.question(answer, at: DNSHeader.size),
              let (ours, _) = try? MessageWalker.question(query, at: DNSHeader.size),
              theirs.type == ours.type, theirs.dnsClass == ours.dnsClass else { return false }
        return (try? NameCursor.equal(answer, at: theirs.name, query, at: ours.name)) ?? false
    }

    /// A query the edge did not hand over (`DNSDropReason.foreignQuery`), counted here
    /// with the proxy's other drops.
    public mutating func dropForeignQuery() { drop(.foreignQuery) }

    private mutating func drop(_ reason: DNSDropReason) {
        counters.dropped[reason, default: 0] += 1
    }

    private mutating func fail(_ message: [UInt8], _ code: DNSResponseCode, to client: Client, over transport: DNSTransport,
                               into actions: inout [DNSProxyAction<Client>]) {
        guard let reply = DNSErrorReply.make(answering: message, code: code) else { return }
        counters.failed += 1
        actions.append(.reply(response: reply, to: client, over: transport))
    }

    /// SERVFAIL for a query in flight, with the client's ID.
    private mutating func fail(_ query: InFlightQueries<Client>.Query, into actions: inout [DNSProxyAction<Client>]) {
        var original = query.bytes
        Wire.put16(query.clientID, into: &original, at: 0)
        fail(original, .serverFailure, to: query.client, over: query.transport, into: &actions)
    }
}
