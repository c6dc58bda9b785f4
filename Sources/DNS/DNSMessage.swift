import Addresses
import DomainNames

/// A whole message as values (RFC 1035 4, RFC 3596 for AAAA, RFC 6891 for EDNS): what the
/// proxy builds its own replies from and what tests compare. The proxy's forwarding path
/// does not use it: it reads answers in place (`MessageWalker`) and forwards their bytes.
public struct DNSMessage: Hashable, Sendable {
    public var header: DNSHeader
    public var questions: [DNSQuestion]
    public var answers: [DNSRecord]
    public var authority: [DNSRecord]
    /// The additional section without its OPT record, which is `edns`.
    public var additional: [DNSRecord]
    public var edns: EDNS?

    public init(header: DNSHeader, questions: [DNSQuestion] = [], answers: [DNSRecord] = [], authority: [DNSRecord] = [],
                additional: [DNSRecord] = [], edns: EDNS? = nil) {
        self.header = header
        self.questions = questions
        self.answers = answers
        self.authority = authority
        self.additional = additional
        self.edns = edns
    }

    /// Parses a message, refusing anything out of place with the reason.
    public init(parsing bytes: [UInt8]) throws(DNSWireError) {
        guard let header = DNSHeader(of: bytes) else { throw .truncated }
        self.header = header
        let walker = try MessageWalker(bytes)
        // Counts come from the sender; the bytes there bound what can really follow.
        var questionRefs: [QuestionRef] = [], recordRefs: [(DNSSection, RecordRef)] = []
        questionRefs.reserveCapacity(min(walker.questionCount, bytes.count / 5))
        try walker.walk(bytes, question: { questionRefs.append($0) }, record: { recordRefs.append(($0, $1)) })
        questions = []
        answers = []
        authority = []
        additional = []
        edns = nil
        for ref in questionRefs {
            questions.append(DNSQuestion(name: try DomainName(in: bytes, at: ref.name), type: ref.type, dnsClass: ref.dnsClass))
        }
        for (section, ref) in recordRefs {
            if ref.type == .opt {
                edns = try EDNS(ref, in: bytes)
                continue
            }
            let record = try DNSRecord(ref, in: bytes)
            switch section {
            case .answer: answers.append(record)
            case .authority: authority.append(record)
            case .additional: additional.append(record)
            }
        }
    }

    /// Wire form, names compressed where they repeat (RFC 1035 4.1.4).
    public func encoded() -> [UInt8] {
        var writer = WireWriter()
        writer.put16(header.id)
        writer.put16(header.flags)
        writer.put16(UInt16(truncatingIfNeeded: questions.count))
        writer.put16(UInt16(truncatingIfNeeded: answers.count))
        writer.put16(UInt16(truncatingIfNeeded: authority.count))
        writer.put16(UInt16(truncatingIfNeeded: additional.count + (edns == nil ? 0 : 1)))
        for question in questions {
            writer.putName(question.name)
            writer.put16(question.type.rawValue)
            writer.put16(question.dnsClass.rawValue)
        }
        for record in answers + authority + additional { writer.put(record) }
        if let edns { writer.put(edns) }
        return writer.bytes
    }
}

public struct DNSQuestion: Hashable, Sendable {
    public var name: DomainName
    public var type: DNSRecordType
    public var dnsClass: DNSClass

    public init(name: DomainName, type: DNSRecordType, dnsClass: DNSClass = .internet) {
        self.name = name
        self.type = type
        self.dnsClass = dnsClass
    }
}

public struct DNSRecord: Hashable, Sendable {
    public var name: DomainName
    public var dnsClass: DNSClass
    /// As received; RFC 2181 8 says to read a value with the top bit set as zero, which
    /// `effectiveTTL` does.
    public var ttl: UInt32
    public var data: DNSRecordData

    public init(name: DomainName, dnsClass: DNSClass = .internet, ttl: UInt32, data: DNSRecordData) {
        self.name = name
        self.dnsClass = dnsClass
        self.ttl = ttl
        self.data = data
    }

    public var type: DNSRecordType { data.type }
    public var effectiveTTL: UInt32 { Wire.effectiveTTL(ttl) }

    init(_ ref: RecordRef, in bytes: [UInt8]) throws(DNSWireError) {
        name = try DomainName(in: bytes, at: ref.name)
        dnsClass = ref.dnsClass
        ttl = ref.ttl
        data = try DNSRecordData(ref, in: bytes)
    }
}

/// What a record holds: addresses and CNAME targets decoded, everything else opaque. The
/// names inside RFC 1035's own types (NS, SOA, MX, PTR...) are decompressed into the opaque
/// bytes, so those stand on their own outside the message they came in.
public enum DNSRecordData: Hashable, Sendable {
    /// A (IPv4) or AAAA (IPv6) in class IN.
    case address(IPAddress)
    case cname(DomainName)
    case opaque(DNSRecordType, [UInt8])

    public var type: DNSRecordType {
        switch self {
        case let .address(address): return address.isIPv4 ? .a : .aaaa
        case .cname: return .cname
        case let .opaque(type, _): return type
        }
    }

    init(_ ref: RecordRef, in bytes: [UInt8]) throws(DNSWireError) {
        let data = ref.data
        if ref.dnsClass == .internet, ref.type == .a || ref.type == .aaaa {
            self = .address(Wire.address(bytes, data))
            return
        }
        if ref.type == .cname {
            self = .cname(try DomainName(in: bytes, at: data.lowerBound))
            return
        }
        guard let fields = RdataLayout.fields(of: ref.type) else {
            self = .opaque(ref.type, Array(bytes[data]))
            return
        }
        var expanded: [UInt8] = []
        var at = data.lowerBound
        for field in fields {
            switch field {
            case .name:
                expanded += try DomainName(in: bytes, at: at).wire
                at = try NameCursor.skip(bytes, at: at)
            case let .fixed(count):
                expanded += bytes[at..<(at + count)]
                at += count
            }
        }
        self = .opaque(ref.type, expanded)
    }
}

/// The OPT pseudo-record's fields (RFC 6891 6.1.2-6.1.3).
public struct EDNS: Hashable, Sendable {
    public var udpPayloadSize: UInt16
    /// The upper 8 bits of the 12-bit response code.
    public var extendedResponseCode: UInt8
    public var version: UInt8
    /// DO (0x8000) and the reserved Z bits.
    public var flags: UInt16
    public var options: [Option]

    public struct Option: Hashable, Sendable {
        public var code: UInt16
        public var data: [UInt8]
        public init(code: UInt16, data: [UInt8]) {
            self.code = code
            self.data = data
        }
    }

    public init(udpPayloadSize: UInt16, extendedResponseCode: UInt8 = 0, version: UInt8 = 0, flags: UInt16 = 0, options: [Option] = []) {
        self.udpPayloadSize = udpPayloadSize
        self.extendedResponseCode = extendedResponseCode
        self.version = version
        self.flags = flags
        self.options = options
    }

    init(_ ref: RecordRef, in bytes: [UInt8]) throws(DNSWireError) {
        udpPayloadSize = ref.dnsClass.rawValue
        extendedResponseCode = UInt8(truncatingIfNeeded: ref.ttl >> 24)
        version = UInt8(truncatingIfNeeded: ref.ttl >> 16)
        flags = UInt16(truncatingIfNeeded: ref.ttl)
        options = []
        var at = ref.data.lowerBound
        while at < ref.data.upperBound {
            let length = Int(try Wire.u16(bytes, at + 2))
            options.append(Option(code: try Wire.u16(bytes, at), data: Array(bytes[(at + 4)..<(at + 4 + length)])))
            at += 4 + length
        }
    }
}
