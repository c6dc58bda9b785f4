/// The 16-bit and 4-bit codes of the protocol as types, so a record type is never passed
/// where a class is expected. Unknown values are kept, not refused: they travel as opaque.

public struct DNSRecordType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let a = Self(rawValue: 1)
    public static let ns = Self(rawValue: 2)
    public static let cname = Self(rawValue: 5)
    public static let soa = Self(rawValue: 6)
    public static let ptr = Self(rawValue: 12)
    public static let minfo = Self(rawValue: 14)
    public static let mx = Self(rawValue: 15)
    public static let txt = Self(rawValue: 16)
    public static let aaaa = Self(rawValue: 28)
    public static let opt = Self(rawValue: 41)
    public static let svcb = Self(rawValue: 64)
    public static let https = Self(rawValue: 65)

    public var description: String {
        switch self {
        case .a: return "A"
        case .ns: return "NS"
        case .cname: return "CNAME"
        case .soa: return "SOA"
        case .ptr: return "PTR"
        case .mx: return "MX"
        case .txt: return "TXT"
        case .aaaa: return "AAAA"
        case .opt: return "OPT"
        case .svcb: return "SVCB"
        case .https: return "HTTPS"
        default: return "TYPE\(rawValue)"
        }
    }
}

public struct DNSClass: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let internet = Self(rawValue: 1)
    public static let chaos = Self(rawValue: 3)
    public static let any = Self(rawValue: 255)
}

public struct DNSOpcode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0f }

    public static let query = Self(rawValue: 0)
    public static let notify = Self(rawValue: 4)
    public static let update = Self(rawValue: 5)
}

/// The header's 4-bit RCODE (EDNS widens it to 12 bits; the proxy only sends the low ones).
public struct DNSResponseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0f }

    public static let noError = Self(rawValue: 0)
    public static let formatError = Self(rawValue: 1)
    public static let serverFailure = Self(rawValue: 2)
    public static let nameError = Self(rawValue: 3)
    public static let notImplemented = Self(rawValue: 4)
    public static let refused = Self(rawValue: 5)

    public var description: String {
        switch self {
        case .noError: return "NOERROR"
        case .formatError: return "FORMERR"
        case .serverFailure: return "SERVFAIL"
        case .nameError: return "NXDOMAIN"
        case .notImplemented: return "NOTIMP"
        case .refused: return "REFUSED"
        default: return "RCODE\(rawValue)"
        }
    }
}
