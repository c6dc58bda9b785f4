/// The fixed 12-byte header (RFC 1035 4.1.1). The four section counts are not stored here:
/// a parsed message has its sections as arrays, and the encoder counts them.
public struct DNSHeader: Hashable, Sendable {
    public static let size = 12

    public var id: UInt16
    /// QR, opcode, AA, TC, RD, RA, Z, AD, CD and RCODE as on the wire.
    public var flags: UInt16

    public init(id: UInt16, flags: UInt16 = 0) {
        self.id = id
        self.flags = flags
    }

    /// The header at the start of a message; nil when the message is shorter than one.
    public init?(of message: [UInt8]) {
        guard message.count >= Self.size else { return nil }
        self.init(id: UInt16(message[0]) << 8 | UInt16(message[1]), flags: UInt16(message[2]) << 8 | UInt16(message[3]))
    }

    public var isResponse: Bool { get { self[0x8000] } set { self[0x8000] = newValue } }
    public var isAuthoritative: Bool { get { self[0x0400] } set { self[0x0400] = newValue } }
    public var isTruncated: Bool { get { self[0x0200] } set { self[0x0200] = newValue } }
    public var recursionDesired: Bool { get { self[0x0100] } set { self[0x0100] = newValue } }
    public var recursionAvailable: Bool { get { self[0x0080] } set { self[0x0080] = newValue } }
    public var checkingDisabled: Bool { get { self[0x0010] } set { self[0x0010] = newValue } }

    public var opcode: DNSOpcode {
        get { DNSOpcode(rawValue: UInt8(flags >> 11 & 0x0f)) }
        set { flags = flags & ~0x7800 | UInt16(newValue.rawValue) << 11 }
    }

    public var responseCode: DNSResponseCode {
        get { DNSResponseCode(rawValue: UInt8(flags & 0x0f)) }
        set { flags = flags & ~0x000f | UInt16(newValue.rawValue) }
    }

    private subscript(bit: UInt16) -> Bool {
        get { flags & bit != 0 }
        set { flags = newValue ? flags | bit : flags & ~bit }
    }
}
