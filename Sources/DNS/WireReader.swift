import Addresses
import DomainNames

/// Reading a message in place: fields, names and records as positions in the caller's
/// bytes, nothing copied. The full parser (`DNSMessage`) and the proxy's hot path both stand
/// on this, so a message is judged well formed by one piece of code.
enum Wire {
    @inline(__always)
    static func u8(_ bytes: [UInt8], _ at: Int) throws(DNSWireError) -> UInt8 {
        guard at >= 0, at < bytes.count else { throw .truncated }
        return bytes[at]
    }

    @inline(__always)
    static func u16(_ bytes: [UInt8], _ at: Int) throws(DNSWireError) -> UInt16 {
        guard at >= 0, at + 2 <= bytes.count else { throw .truncated }
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    @inline(__always)
    static func u32(_ bytes: [UInt8], _ at: Int) throws(DNSWireError) -> UInt32 {
        guard at >= 0, at + 4 <= bytes.count else { throw .truncated }
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    @inline(__always)
    static func put16(_ value: UInt16, into bytes: inout [UInt8], at: Int) {
        bytes[at] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[at + 1] = UInt8(truncatingIfNeeded: value)
    }

    @inline(__always)
    static func put32(_ value: UInt32, into bytes: inout [UInt8], at: Int) {
        put16(UInt16(truncatingIfNeeded: value >> 16), into: &bytes, at: at)
        put16(UInt16(truncatingIfNeeded: value), into: &bytes, at: at + 2)
    }

    /// The address in an A or AAAA record's data (4 or 16 bytes, checked by `RdataLayout`),
    /// read without the generic detour of `IPAddress(bytes:)` on the data path.
    @inline(__always)
    static func address(_ bytes: [UInt8], _ data: Range<Int>) -> IPAddress {
        let at = data.lowerBound
        guard data.count == 16 else { return .v4(UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])) }
        var high: UInt64 = 0, low: UInt64 = 0
        for i in 0..<8 {
            high = high << 8 | UInt64(bytes[at + i])
            low = low << 8 | UInt64(bytes[at + 8 + i])
        }
        return .v6(high, low)
    }

    /// RFC 2181 8: a TTL with the top bit set is read as zero.
    @inline(__always)
    static func effectiveTTL(_ raw: UInt32) -> UInt32 {
        raw & 0x8000_0000 == 0 ? raw : 0
    }

    /// DNS compares names without regard to ASCII case (RFC 4343); other bytes are as they are.
    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 { ASCIICase.lower(byte) }
}

/// Walks the labels of one name, following compression pointers. Pointers may point
/// forwards (RFC 1035 does not forbid it), so loops are caught by counting hops rather than
/// by requiring each pointer to go back; the 255-byte limit bounds a loop that yields labels.
struct NameCursor {
    /// A legitimate name needs far fewer: one pointer per suffix it shares, at most one per label.
    static let maxPointerHops = 127
    static let maxWireLength = DomainName.maxWireLength

    private var position: Int
    private var resume = -1
    private var wireLength = 1
    private var hops = 0

    init(at offset: Int) { position = offset }

    /// Where the name ends in the byte stream it was read from (after its first pointer or its
    /// root label); valid once `next` has returned nil.
    var end: Int { resume >= 0 ? resume : position }

    /// The next label's bytes, or nil after the last one (the root).
    @inline(__always)
    mutating func next(in bytes: [UInt8]) throws(DNSWireError) -> Range<Int>? {
        while true {
            let length = Int(try Wire.u8(bytes, position))
            switch length & 0xc0 {
            case 0x00:
                if length == 0 {
                    position += 1
                    return nil
                }
                wireLength += length + 1
                guard wireLength <= Self.maxWireLength else { throw .nameTooLong }
                let start = position + 1
                guard start + length <= bytes.count else { throw .truncated }
                position = start + length
                return start..<position
            case 0xc0:
                let target = (length & 0x3f) << 8 | Int(try Wire.u8(bytes, position + 1))
                if resume < 0 { resume = position + 2 }
                hops += 1
                guard hops <= Self.maxPointerHops else { throw .compressionLoop }
                // The header holds counts and flags, never a name.
                guard target >= DNSHeader.size, target < bytes.count else { throw .pointerOutOfRange }
                position = target
            default:
                throw .reservedLabelType
            }
        }
    }

    /// Validates the name at `offset` and returns where it ends in the stream.
    static func skip(_ bytes: [UInt8], at offset: Int) throws(DNSWireError) -> Int {
        var cursor = NameCursor(at: offset)
        while try cursor.next(in: bytes) != nil {}
        return cursor.end
    }

    /// Whether two names (each in its own message, or both in one) are the same name.
    static func equal(_ a: [UInt8], at aOffset: Int, _ b: [UInt8], at bOffset: Int) throws(DNSWireError) -> Bool {
        var left = NameCursor(at: aOffset), right = NameCursor(at: bOffset)
        while true {
            let l = try left.next(in: a), r = try right.next(in: b)
            guard let l, let r else { return l == nil && r == nil }
            guard l.count == r.count else { return false }
            var i = l.lowerBound, j = r.lowerBound
            while i < l.upperBound {
                if Wire.lower(a[i]) != Wire.lower(b[j]) { return false }
                i += 1
                j += 1
            }
        }
    }
}

/// A question as positions in its message.
struct QuestionRef {
    var name: Int
    var type: DNSRecordType
    var dnsClass: DNSClass
}

/// A resource record as positions in its message.
struct RecordRef {
    var name: Int
    var type: DNSRecordType
    var dnsClass: DNSClass
    var ttlOffset: Int
    var ttl: UInt32
    var data: Range<Int>
}

enum DNSSection: Int, CaseIterable, Sendable {
    case answer, authority, additional
}

/// How the rdata of a type is laid out, where it holds names. Only RFC 1035's types may
/// carry compressed names (RFC 3597 4); every other type is opaque bytes to us.
enum RdataLayout {
    enum Field { case name, fixed(Int) }

    private static let oneName: [Field] = [.name]
    private static let mx: [Field] = [.fixed(2), .name]
    private static let soa: [Field] = [.name, .name, .fixed(20)]
    private static let twoNames: [Field] = [.name, .name]

    static func fields(of type: DNSRecordType) -> [Field]? {
        switch type.rawValue {
        case 2, 3, 4, 5, 7, 8, 9, 12: return oneName // NS, MD, MF, CNAME, MB, MG, MR, PTR
        case 15: return mx
        case 6: return soa
        case 14: return twoNames // MINFO
        default: return nil
        }
    }

    /// Checks that the rdata of `record` is what its type says it is.
    static func validate(_ record: RecordRef, in bytes: [UInt8]) throws(DNSWireError) {
        let data = record.data
        if record.dnsClass == .internet {
            if record.type == .a, data.count != 4 { throw .badRecordData }
            if record.type == .aaaa, data.count != 16 { throw .badRecordData }
        }
        if record.type == .opt {
            var at = data.lowerBound
            while at < data.upperBound {
                guard at + 4 <= data.upperBound else { throw .badRecordData }
                at += 4 + Int(try Wire.u16(bytes, at + 2))
            }
            guard at == data.upperBound else { throw .badRecordData }
            return
        }
        guard let fields = fields(of: record.type) else { return }
        var at = data.lowerBound
        for field in fields {
            switch field {
            case .name:
                guard at < data.upperBound else { throw .badRecordData }
                at = try NameCursor.skip(bytes, at: at)
            case let .fixed(count):
                at += count
            }
            guard at <= data.upperBound else { throw .badRecordData }
        }
        guard at == data.upperBound else { throw .badRecordData }
    }
}

/// Walks a whole message section by section, handing each question and record to the
/// caller, and refuses it at the first thing out of place (see `DNSWireError`).
struct MessageWalker {
    let questionCount: Int
    let sectionCounts: (answer: Int, authority: Int, additional: Int)

    init(_ bytes: [UInt8]) throws(DNSWireError) {
        questionCount = Int(try Wire.u16(bytes, 4))
        sectionCounts = (Int(try Wire.u16(bytes, 6)), Int(try Wire.u16(bytes, 8)), Int(try Wire.u16(bytes, 10)))
    }

    func count(_ section: DNSSection) -> Int {
        switch section {
        case .answer: return sectionCounts.answer
        case .authority: return sectionCounts.authority
        case .additional: return sectionCounts.additional
        }
    }

    static func question(_ bytes: [UInt8], at offset: Int) throws(DNSWireError) -> (QuestionRef, end: Int) {
        let end = try NameCursor.skip(bytes, at: offset)
        let type = DNSRecordType(rawValue: try Wire.u16(bytes, end))
        let dnsClass = DNSClass(rawValue: try Wire.u16(bytes, end + 2))
        return (QuestionRef(name: offset, type: type, dnsClass: dnsClass), end + 4)
    }

    static func record(_ bytes: [UInt8], at offset: Int) throws(DNSWireError) -> RecordRef {
        let end = try NameCursor.skip(bytes, at: offset)
        let type = DNSRecordType(rawValue: try Wire.u16(bytes, end))
        let dnsClass = DNSClass(rawValue: try Wire.u16(bytes, end + 2))
        let ttl = try Wire.u32(bytes, end + 4)
        let length = Int(try Wire.u16(bytes, end + 8))
        let start = end + 10
        guard start + length <= bytes.count else { throw .truncated }
        let record = RecordRef(name: offset, type: type, dnsClass: dnsClass, ttlOffset: end + 4, ttl: ttl, data: start..<(start + length))
        try RdataLayout.validate(record, in: bytes)
        return record
    }

    /// Visits every question and record in order; throws at the first malformed one, or if
    /// bytes follow the last.
    func walk(_ bytes: [UInt8], question: (QuestionRef) -> Void, record: (DNSSection, RecordRef) -> Void) throws(DNSWireError) {
        var at = DNSHeader.size
        for _ in 0..<questionCount {
            let (ref, end) = try Self.question(bytes, at: at)
            question(ref)
            at = end
        }
        var sawOPT = false
        for section in DNSSection.allCases {
            for _ in 0..<count(section) {
                let ref = try Self.record(bytes, at: at)
                if ref.type == .opt {
                    var owner = NameCursor(at: ref.name)
                    guard section == .additional, !sawOPT, try owner.next(in: bytes) == nil else { throw .misplacedOPT }
                    sawOPT = true
                }
                record(section, ref)
                at = ref.data.upperBound
            }
        }
        guard at == bytes.count else { throw .trailingBytes }
    }
}
