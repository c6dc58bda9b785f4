import Addresses
@testable import DNS
import DomainNames

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

func unhex(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    for i in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[i...(i + 1)], as: UTF8.self), radix: 16) else { return nil }
        bytes.append(byte)
    }
    return bytes
}

/// One line per message in the format of the dnspython oracle's `describe`.
func describe(_ message: DNSMessage) -> String {
    var parts = ["id=\(message.header.id) flags=\(message.header.flags)"]
    parts += message.questions.map { "q=\($0.name) \($0.type.rawValue) \($0.dnsClass.rawValue)" }
    for (tag, section) in [("an", message.answers), ("ns", message.authority), ("ar", message.additional)] {
        for record in section {
            let data: String
            switch record.data {
            case let .address(address): data = hex(address.bytes)
            case let .cname(target): data = target.description
            case let .opaque(_, bytes): data = hex(bytes)
            }
            parts.append("\(tag)=\(record.name) \(record.dnsClass.rawValue) \(record.effectiveTTL) \(record.type.rawValue) \(data)")
        }
    }
    if let edns = message.edns {
        let options = edns.options.map { "\($0.code):\(hex($0.data))" }.joined(separator: ",")
        parts.append("edns=\(edns.udpPayloadSize) \(edns.extendedResponseCode) \(edns.version) \(edns.flags) \(options)")
    }
    return parts.joined(separator: " | ")
}

func name(_ text: String) -> DomainName { DomainName(text)! }

/// A recursive query as a stub resolver sends it.
func query(_ text: String, _ type: DNSRecordType = .a, id: UInt16 = 0x1234, edns: Bool = false) -> [UInt8] {
    var header = DNSHeader(id: id)
    header.recursionDesired = true
    return DNSMessage(header: header, questions: [DNSQuestion(name: name(text), type: type)],
                      edns: edns ? EDNS(udpPayloadSize: 1232) : nil).encoded()
}

/// A NOERROR answer to `question` with `records`, as a recursive resolver sends it.
func answer(_ text: String, _ type: DNSRecordType = .a, id: UInt16, records: [DNSRecord], code: DNSResponseCode = .noError) -> [UInt8] {
    var header = DNSHeader(id: id)
    header.isResponse = true
    header.recursionDesired = true
    header.recursionAvailable = true
    header.responseCode = code
    return DNSMessage(header: header, questions: [DNSQuestion(name: name(text), type: type)], answers: records).encoded()
}

func a(_ owner: String, _ address: String, ttl: UInt32 = 300) -> DNSRecord {
    DNSRecord(name: name(owner), ttl: ttl, data: .address(IPAddress(address)!))
}

func cname(_ owner: String, _ target: String, ttl: UInt32 = 300) -> DNSRecord {
    DNSRecord(name: name(owner), ttl: ttl, data: .cname(name(target)))
}

/// An HTTPS record (RFC 9460): priority, an uncompressed target name (the root by default),
/// and SvcParams as key and value, written as given (so a test can write them wrong).
func https(_ owner: String, priority: UInt16 = 1, target: [UInt8] = [0], params: [(key: UInt16, value: [UInt8])], ttl: UInt32 = 300) -> DNSRecord {
    var rdata = [UInt8(priority >> 8), UInt8(priority & 0xff)] + target
    for (key, value) in params {
        rdata += [UInt8(key >> 8), UInt8(key & 0xff), UInt8(value.count >> 8), UInt8(value.count & 0xff)] + value
    }
    return DNSRecord(name: name(owner), ttl: ttl, data: .opaque(.https, rdata))
}

/// Deterministic randomness for property tests (SplitMix64).
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
