/// DNS over TCP prefixes every message with its length in two bytes (RFC 1035 4.2.2,
/// RFC 7766). Reads arrive in arbitrary pieces: `DNSTCPReader` collects them and hands out
/// whole messages; what remains is at most one partial frame.
public enum DNSTCPFraming {
    public static let maxMessageSize = 65535

    /// The message with its length prefix; nil for a message too long to frame.
    public static func frame(_ message: [UInt8]) -> [UInt8]? {
        guard message.count <= maxMessageSize else { return nil }
        var framed: [UInt8] = []
        framed.reserveCapacity(2 + message.count)
        framed.append(UInt8(truncatingIfNeeded: message.count >> 8))
        framed.append(UInt8(truncatingIfNeeded: message.count))
        framed += message
        return framed
    }
}

public struct DNSTCPReader: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes held that do not yet make a whole message (a client that stops mid-frame).
    public var pendingByteCount: Int { buffer.count - start }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        // Drop what was handed out once it is most of the buffer, so the buffer stays
        // within one frame plus one read.
        if start > 0, start >= buffer.count - start {
            buffer.removeFirst(start)
            start = 0
        }
        buffer += bytes
    }

    /// The next whole message, or nil until more bytes arrive.
    public mutating func next() -> [UInt8]? {
        guard buffer.count - start >= 2 else { return nil }
        let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
        guard buffer.count - start - 2 >= length else { return nil }
        let message = Array(buffer[(start + 2)..<(start + 2 + length)])
        start += 2 + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return message
    }
}
