/// Why bytes are not a DNS message. Every refusal of the codec is one of these: a parser fed
/// garbage returns an error, it never traps, and nothing is changed by a refused message.
public enum DNSWireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The message ends inside its header, a name, a record or the rdata a length promised.
    case truncated
    /// A compression pointer leads outside the message or into its 12-byte header.
    case pointerOutOfRange
    /// Compression pointers that keep pointing at each other without reaching the root.
    case compressionLoop
    /// A name longer than 255 bytes in wire form (RFC 1035 3.1), pointers followed.
    case nameTooLong
    /// A label length byte with the reserved top bits 01 or 10 (RFC 6891 deprecated them).
    case reservedLabelType
    /// Rdata whose length does not fit its type: an A of other than 4 bytes, a CNAME whose
    /// name runs past or stops short of its rdata, EDNS options that overrun.
    case badRecordData
    /// An OPT record outside the additional section, with a name other than the root, or
    /// more than one of them (RFC 6891 6.1.1).
    case misplacedOPT
    /// Bytes after the last record the header announced.
    case trailingBytes

    public var description: String {
        switch self {
        case .truncated: return "message truncated"
        case .pointerOutOfRange: return "compression pointer outside the message"
        case .compressionLoop: return "compression pointers loop"
        case .nameTooLong: return "name longer than 255 bytes"
        case .reservedLabelType: return "label with a reserved type"
        case .badRecordData: return "record data does not fit its type"
        case .misplacedOPT: return "misplaced or repeated OPT record"
        case .trailingBytes: return "bytes after the last record"
        }
    }
}
