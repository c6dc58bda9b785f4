import JSON

/// Varlink's framing on a stream socket: each message is one JSON object followed by a NUL
/// byte. A message longer than `maxMessage` (nss-resolve's calls are a few hundred bytes)
/// ends the connection rather than growing a buffer for whoever writes without end.
public struct VarlinkReader: Sendable {
    public static let maxMessage = 65536

    private var buffer: [UInt8] = []
    /// Set once a message was too long: nothing more is read.
    public private(set) var overflowed = false

    public init() {}

    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard !overflowed else { return }
        buffer += bytes
    }

    /// The next whole message without its NUL, or nil until one is complete (or after an
    /// overflow, which `overflowed` says).
    public mutating func next() -> [UInt8]? {
        guard !overflowed else { return nil }
        guard let end = buffer.firstIndex(of: 0) else {
            if buffer.count > Self.maxMessage {
                overflowed = true
                buffer = []
            }
            return nil
        }
        guard end <= Self.maxMessage else {
            overflowed = true
            buffer = []
            return nil
        }
        let message = Array(buffer[..<end])
        buffer.removeSubrange(...end)
        return message
    }
}

public enum VarlinkWriter {
    /// The message's bytes as sent: its JSON, then NUL.
    public static func frame(_ message: JSONValue) -> [UInt8] { Array(message.encoded.utf8) + [0] }
}
