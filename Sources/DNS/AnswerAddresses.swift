import Addresses
import DomainNames

/// What a response says about the name that was asked: the CNAME chain from the question's
/// name, the A and AAAA records of the chain's names, and which domain lists each name of the
/// chain falls in. A chain counts for a list when ANY of its names is in it: with
/// `bank.example` listed and `bank.example CNAME bank.cdn.example`, the CDN's addresses are
/// the ones the client will connect to, so they are the ones the set needs (and a listed
/// `*.cdn.example` catches `shop.example CNAME x.cdn.example` the same way). Records of names
/// outside the chain, and anything in the authority and additional sections, are ignored:
/// an upstream may add them, but they are not the answer to the question.
public struct AnswerAddresses: Sendable {
    /// More CNAMEs than this in one answer is a broken or hostile zone, not a CDN.
    public static let maxCNAMEs = 16

    public enum ChainEnd: Hashable, Sendable {
        /// The last name has no CNAME in the answer.
        case complete
        /// A CNAME points back at a name already in the chain.
        case loop
        /// More than `maxCNAMEs` CNAMEs; the chain is cut there.
        case tooLong
    }

    public struct Address: Hashable, Sendable {
        public var owner: DomainName
        public var address: IPAddress
        /// In seconds, read as RFC 2181 says (a TTL with the top bit set is 0).
        public var ttl: UInt32
    }

    /// The question's name first, then each CNAME target in turn.
    public var chain: [DomainName]
    public var chainEnd: ChainEnd
    /// For each name of `chain`, the lists it falls in.
    public var matches: [DomainList.Membership]
    /// The addresses of the chain's names: A and AAAA records in answer order, then the
    /// address hints of their HTTPS and SVCB records.
    public var addresses: [Address]

    /// Every list any name of the chain falls in.
    public var lists: DomainList.Membership { matches.reduce([]) { $0.union($1) } }

    /// Reads a whole response (every section is checked, as the proxy does before it relays
    /// one); a response without exactly one question has an empty chain.
    public init(response: [UInt8], lists: DomainList) throws(DNSWireError) {
        var scan = AnswerScan()
        try scan.read(response, lists: lists, followChain: true)
        chain = []
        for offset in scan.chain { chain.append(try DomainName(in: response, at: offset)) }
        chainEnd = scan.chainEnd
        matches = scan.chainLists
        addresses = []
        for index in scan.addressRecords {
            let record = scan.records[index]
            addresses.append(Address(owner: try DomainName(in: response, at: record.name),
                                     address: Wire.address(response, record.data),
                                     ttl: Wire.effectiveTTL(record.ttl)))
        }
        for index in scan.serviceRecords {
            let record = scan.records[index]
            let owner = try DomainName(in: response, at: record.name)
            for hint in ServiceHints.addresses(response, record.data) {
                addresses.append(Address(owner: owner, address: hint, ttl: Wire.effectiveTTL(record.ttl)))
            }
        }
    }
}

/// The allocation-free reading behind `AnswerAddresses`, which the proxy keeps and reuses:
/// positions in the response, in arrays that keep their capacity from one answer to the next.
struct AnswerScan {
    /// The answer section.
    private(set) var records: [RecordRef] = []
    /// Name offsets: the question's name, then each CNAME target.
    private(set) var chain: [Int] = []
    private(set) var chainLists: [DomainList.Membership] = []
    private(set) var chainEnd = AnswerAddresses.ChainEnd.complete
    /// Indices into `records` of the chain's CNAMEs, of the chain's names' A and AAAA, and
    /// of their HTTPS and SVCB (whose address hints count as addresses).
    private(set) var cnameRecords: [Int] = []
    private(set) var addressRecords: [Int] = []
    private(set) var serviceRecords: [Int] = []
    private(set) var lists: DomainList.Membership = []

    /// Checks the whole message and, when `followChain`, follows the chain and matches its names.
    mutating func read(_ bytes: [UInt8], lists index: DomainList, followChain: Bool) throws(DNSWireError) {
        records.removeAll(keepingCapacity: true)
        chain.removeAll(keepingCapacity: true)
        chainLists.removeAll(keepingCapacity: true)
        cnameRecords.removeAll(keepingCapacity: true)
        addressRecords.removeAll(keepingCapacity: true)
        serviceRecords.removeAll(keepingCapacity: true)
        chainEnd = .complete
        lists = []
        let walker = try MessageWalker(bytes)
        var question: QuestionRef?
        try walker.walk(bytes, question: { question = $0 }, record: { section, record in
            if section == .answer { records.append(record) }
        })
        guard followChain, walker.questionCount == 1, let question, question.dnsClass == .internet else { return }
        chain.append(question.name)
        while let next = try cnameRecord(of: chain[chain.count - 1], in: bytes) {
            let target = records[next].data.lowerBound
            for name in chain where try Self.sameName(bytes, name, target) {
                chainEnd = .loop
                break
            }
            guard chainEnd == .complete else { break }
            guard cnameRecords.count < AnswerAddresses.maxCNAMEs else {
                chainEnd = .tooLong
                break
            }
            cnameRecords.append(next)
            chain.append(target)
        }
        for name in chain {
            let membership = try index.lists(matchingNameAt: name, in: bytes)
            chainLists.append(membership)
            lists.formUnion(membership)
        }
        for (i, record) in records.enumerated() where record.dnsClass == .internet {
            let isAddress = record.type == .a || record.type == .aaaa
            guard isAddress || record.type == .https || record.type == .svcb else { continue }
            for name in chain where try Self.sameName(bytes, name, record.name) {
                if isAddress { addressRecords.append(i) } else { serviceRecords.append(i) }
                break
            }
        }
    }

    private func cnameRecord(of name: Int, in bytes: [UInt8]) throws(DNSWireError) -> Int? {
        for (i, record) in records.enumerated() where record.type == .cname && record.dnsClass == .internet {
            if try Self.sameName(bytes, record.name, name) { return i }
        }
        return nil
    }

    /// Names in one message: most owners are a pointer to the very name they are compared
    /// with, which settles it without reading labels.
    private static func sameName(_ bytes: [UInt8], _ a: Int, _ b: Int) throws(DNSWireError) -> Bool {
        let x = resolve(bytes, a), y = resolve(bytes, b)
        return x == y ? true : try NameCursor.equal(bytes, at: x, bytes, at: y)
    }

    /// Where the name's first label is, its leading pointers followed (a few at most; a
    /// loop is left for the cursor to report).
    private static func resolve(_ bytes: [UInt8], _ offset: Int) -> Int {
        var at = offset
        for _ in 0..<4 {
            guard at + 1 < bytes.count, bytes[at] & 0xc0 == 0xc0 else { break }
            at = Int(bytes[at] & 0x3f) << 8 | Int(bytes[at + 1])
        }
        return at
    }
}
