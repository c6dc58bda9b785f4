import DomainNames

/// Builds wire form, compressing a name's suffixes that were written before (RFC 1035
/// 4.1.4). Only used for messages the proxy makes itself and for tests, so it favours
/// plainness over speed.
struct WireWriter {
    private(set) var bytes: [UInt8] = []
    /// Lower-cased wire form of every suffix written so far, to where it starts.
    private var suffixes: [[UInt8]: Int] = [:]

    mutating func put16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    mutating func put32(_ value: UInt32) {
        put16(UInt16(truncatingIfNeeded: value >> 16))
        put16(UInt16(truncatingIfNeeded: value))
    }

    mutating func putName(_ name: DomainName, compress: Bool = true) {
        let lower = name.lowercased.wire
        var at = 0
        while lower[at] != 0 {
            let suffix = Array(lower[at...])
            if compress, let target = suffixes[suffix] {
                put16(0xc000 | UInt16(target))
                return
            }
            // A pointer has 14 bits: later names can only point into the first 16 KiB.
            if compress, bytes.count < 0x4000 { suffixes[suffix] = bytes.count }
            let length = Int(name.wire[at])
            bytes += name.wire[at...(at + length)]
            at += 1 + length
        }
        bytes.append(0)
    }

    mutating func put(_ record: DNSRecord) {
        putName(record.name)
        put16(record.type.rawValue)
        put16(record.dnsClass.rawValue)
        put32(record.ttl)
        let lengthAt = bytes.count
        put16(0)
        switch record.data {
        case let .address(address): bytes += address.bytes
        case let .cname(target): putName(target)
        case let .opaque(_, data): bytes += data
        }
        Wire.put16(UInt16(truncatingIfNeeded: bytes.count - lengthAt - 2), into: &bytes, at: lengthAt)
    }

    mutating func put(_ edns: EDNS) {
        bytes.append(0)
        put16(DNSRecordType.opt.rawValue)
        put16(edns.udpPayloadSize)
        put32(UInt32(edns.extendedResponseCode) << 24 | UInt32(edns.version) << 16 | UInt32(edns.flags))
        put16(UInt16(truncatingIfNeeded: edns.options.reduce(0) { $0 + 4 + $1.data.count }))
        for option in edns.options {
            put16(option.code)
            put16(UInt16(truncatingIfNeeded: option.data.count))
            bytes += option.data
        }
    }
}
