import Addresses
import DNS
import DomainNames
import JSON

/// One call answered: the DNS queries it takes (A and AAAA for a name, by the family asked;
/// PTR for an address), and, once their answers are in, the reply resolved would give.
/// Pure: the caller sends the queries through the profile's proxy (the same path as a
/// member's port-53 query: its servers, its tunnel, its domain rules and sets) and hands
/// each answer back.
///
/// What resolved answers without asking anyone is answered here too: a literal address is
/// itself, and `localhost` (and names under it) is the loopback addresses. Other names
/// resolved synthesizes (the host's own name, `_gateway`, `_outbound`) go to the profile's
/// resolver.
public struct ResolveLookup: Sendable {
    public let call: ResolveCall
    /// The queries to send, in wire form (ids 1, 2, ...: the proxy gives each a fresh id
    /// of its own upstream and restores this one in its answer).
    public private(set) var queries: [[UInt8]] = []
    private var answers: [[UInt8]?]
    private var received: [Bool]
    private var retried: [Bool]
    /// Set at once for what needs no query, or once every query is answered.
    public private(set) var reply: Result<JSONValue, VarlinkError>?

    /// resolved's SD_RESOLVED_DNS: the answer came from classic unicast DNS.
    public static let fromDNS: Int64 = 1
    /// SD_RESOLVED_SYNTHETIC: made up locally.
    public static let synthetic: Int64 = 1 << 19

    public init(_ call: ResolveCall) {
        self.call = call
        switch call {
        case let .hostname(query):
            if let literal = IPAddress(query.name) {
                let wanted = query.family == .unspecified || (query.family == .ipv4) == literal.isIPv4
                reply = wanted ? .success(Self.addresses([literal], name: literal.description, flags: Self.synthetic)) : .failure(.noSuchResourceRecord)
            } else if Self.isLocalhost(query.name) {
                let loopback = [IPAddress.v4(0x7f00_0001), IPAddress.v6(0, 1)].filter {
                    query.family == .unspecified || (query.family == .ipv4) == $0.isIPv4
                }
                reply = .success(Self.addresses(loopback, name: Self.trimmed(query.name), flags: Self.synthetic))
            } else if let name = DomainName(query.name) {
                let types: [DNSRecordType] = switch query.family {
                case .unspecified: [.a, .aaaa]
                case .ipv4: [.a]
                case .ipv6: [.aaaa]
                }
                queries = types.enumerated().map { Self.query(name, type: $1, id: UInt16($0 + 1)) }
            } else {
                reply = .failure(.invalidParameter("name"))
            }
        case let .address(query):
            queries = [Self.query(Self.reverseName(query.address), type: .ptr, id: 1)]
        }
        answers = Array(repeating: nil, count: queries.count)
        received = Array(repeating: false, count: queries.count)
        retried = Array(repeating: false, count: queries.count)
    }

    /// The answer to query `index` (nil: none came, or the proxy dropped it). The reply is
    /// made once every query has had its answer. A truncated answer (TC) is not taken, once:
    /// true says to ask that query again over TCP.
    @discardableResult
    public mutating func receive(_ answer: [UInt8]?, for index: Int) -> Bool {
        guard reply == nil, answers.indices.contains(index), !received[index] else { return false }
        if let answer, !retried[index], DNSHeader(of: answer)?.isTruncated == true {
            retried[index] = true
            return true
        }
        answers[index] = answer
        received[index] = true
        guard received.allSatisfy({ $0 }) else { return false }
        switch call {
        case let .hostname(query): reply = Self.hostnameReply(query, answers)
        case .address: reply = Self.addressReply(answers[0])
        }
        return false
    }

    /// What a UDP answer may hold (RFC 9715's 1232 bytes, DNS Flag Day 2020): above the
    /// 512 bytes of a query without EDNS, so that a name with many addresses fits.
    static let payloadSize: UInt16 = 1232

    static func query(_ name: DomainName, type: DNSRecordType, id: UInt16) -> [UInt8] {
        var header = DNSHeader(id: id)
        header.recursionDesired = true
        return DNSMessage(header: header, questions: [DNSQuestion(name: name, type: type)], edns: EDNS(udpPayloadSize: payloadSize)).encoded()
    }

    /// in-addr.arpa / ip6.arpa (RFC 1035 3.5, RFC 3596 2.5).
    static func reverseName(_ address: IPAddress) -> DomainName {
        let bytes = address.bytes
        let labels: [String] = address.isIPv4
            ? bytes.reversed().map { String($0) } + ["in-addr", "arpa"]
            : bytes.reversed().flatMap { [String($0 & 0x0f, radix: 16), String($0 >> 4, radix: 16)] } + ["ip6", "arpa"]
        return DomainName(labels: labels.map { Array($0.utf8) })!
    }

    static func isLocalhost(_ name: String) -> Bool {
        let lower = trimmed(name).lowercased()
        return lower == "localhost" || lower.hasSuffix(".localhost")
    }

    static func trimmed(_ name: String) -> String { name.hasSuffix(".") && name.count > 1 ? String(name.dropLast()) : name }

    /// Addresses in the order of the queries (A before AAAA, as resolved lists them), each
    /// of a name on the question's CNAME chain; the canonical name is the first one's owner.
    static func hostnameReply(_ query: ResolveCall.HostnameQuery, _ answers: [[UInt8]?]) -> Result<JSONValue, VarlinkError> {
        var found: [IPAddress] = []
        var canonical: DomainName?
        var failure: VarlinkError?
        for answer in answers {
            guard let answer, let message = try? DNSMessage(parsing: answer), message.header.isResponse else {
                failure = failure ?? .queryTimedOut
                continue
            }
            let code = Int(message.header.responseCode.rawValue)
            guard code == 0 else {
                // NXDOMAIN for one family is the name's; another failure is kept unless
                // the other family answers.
                failure = code == 3 ? .dnsError(rcode: 3) : (failure ?? .dnsError(rcode: code))
                continue
            }
            guard let question = message.questions.first else { continue }
            let chain = Self.chain(from: question.name, in: message.answers)
            for record in message.answers where chain.contains(record.name) && record.type == question.type {
                guard case let .address(address) = record.data else { continue }
                if canonical == nil { canonical = record.name }
                if !found.contains(address) { found.append(address) }
            }
        }
        if !found.isEmpty, let canonical {
            return .success(addresses(found, name: trimmed(canonical.description), flags: fromDNS))
        }
        if case .dnsError(3)? = failure { return .failure(.dnsError(rcode: 3)) }
        return .failure(failure ?? .noSuchResourceRecord)
    }

    static func addressReply(_ answer: [UInt8]?) -> Result<JSONValue, VarlinkError> {
        guard let answer, let message = try? DNSMessage(parsing: answer), message.header.isResponse else { return .failure(.queryTimedOut) }
        let code = Int(message.header.responseCode.rawValue)
        guard code == 0 else { return .failure(.dnsError(rcode: code)) }
        guard let question = message.questions.first else { return .failure(.noSuchResourceRecord) }
        let chain = Self.chain(from: question.name, in: message.answers)
        var names: [JSONValue] = []
        for record in message.answers where chain.contains(record.name) && record.type == .ptr {
            guard case let .opaque(_, wire) = record.data, let name = Self.name(wire: wire) else { continue }
            names.append(.object([("name", .string(trimmed(name.description)))]))
        }
        guard !names.isEmpty else { return .failure(.noSuchResourceRecord) }
        return .success(.object([("parameters", .object([("names", .array(names)), ("flags", .integer(fromDNS))]))]))
    }

    /// A PTR record's target, held uncompressed (DNSRecordData expands it).
    static func name(wire: [UInt8]) -> DomainName? {
        var labels: [[UInt8]] = []
        var at = 0
        while at < wire.count {
            let length = Int(wire[at])
            if length == 0 { return at == wire.count - 1 ? DomainName(labels: labels) : nil }
            guard length <= 63, at + 1 + length <= wire.count else { return nil }
            labels.append(Array(wire[(at + 1)...(at + length)]))
            at += 1 + length
        }
        return nil
    }

    /// The question's name and the CNAME targets that follow from it (at most 16 links).
    static func chain(from name: DomainName, in records: [DNSRecord]) -> Set<DomainName> {
        var chain: Set<DomainName> = [name]
        var current = name
        for _ in 0..<16 {
            guard let next = records.first(where: { $0.name == current && $0.type == .cname }), case let .cname(target) = next.data,
                  !chain.contains(target) else { break }
            chain.insert(target)
            current = target
        }
        return chain
    }

    /// `{"parameters": {"addresses": [{"family": 2, "address": [..]}], "name": .., "flags": ..}}`:
    /// no `ifindex`, as resolved leaves it out for a global server's answer.
    static func addresses(_ addresses: [IPAddress], name: String, flags: Int64) -> JSONValue {
        let entries: [JSONValue] = addresses.map { address in
            .object([("family", .integer(address.isIPv4 ? 2 : 10)), ("address", .array(address.bytes.map { .integer(Int64($0)) }))])
        }
        return .object([("parameters", .object([("addresses", .array(entries)), ("name", .string(name)), ("flags", .integer(flags))]))])
    }
}
