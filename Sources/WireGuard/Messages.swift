import Monotonic

/// The four WireGuard messages: type byte, three reserved zero bytes, then fixed fields,
/// little-endian indices and counters.
public enum MessageType: UInt8, Sendable {
    case initiation = 1, response = 2, cookieReply = 3, transport = 4
}

public enum MessageSize {
    public static let initiation = 148
    public static let response = 92
    public static let cookieReply = 64
    /// Header before a transport message's ciphertext: type, reserved, receiver, counter.
    public static let transportHeader = 16
    /// Smallest transport message: header and the tag of an empty (keepalive) payload.
    public static let transportMinimum = 32
}

/// Classification of raw bytes from the network, before any cryptography: what a fuzz
/// target and the engine's first step share.
public enum WireFormat {
    public static func classify(_ bytes: UnsafeRawBufferPointer) -> Result<MessageType, DropReason> {
        guard bytes.count >= 4, bytes[1] == 0, bytes[2] == 0, bytes[3] == 0,
              let type = MessageType(rawValue: bytes[0]) else { return .failure(.malformed) }
        switch type {
        case .initiation: return bytes.count == MessageSize.initiation ? .success(type) : .failure(.malformed)
        case .response: return bytes.count == MessageSize.response ? .success(type) : .failure(.malformed)
        case .cookieReply: return bytes.count == MessageSize.cookieReply ? .success(type) : .failure(.malformed)
        case .transport:
            // Senders pad to 16 but never past their MTU, so a full-sized packet arrives
            // unpadded: any length from header plus tag up is well formed.
            return bytes.count >= MessageSize.transportMinimum ? .success(type) : .failure(.malformed)
        }
    }

    @inline(__always)
    static func readUInt32(_ b: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: b.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    static func readUInt64(_ b: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: b.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    static func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
}

/// Why a packet was dropped; counted per reason and shown by `vpnctl status`.
public enum DropReason: String, CaseIterable, Sendable, Hashable, Error {
    /// Wrong length, type or layout.
    case malformed
    /// MAC1/MAC2 wrong, or AEAD authentication failed (forged or corrupted).
    case badMAC
    /// A transport counter already seen or too old.
    case replay
    /// No peer with that key, or no session with that receiver index.
    case unknownPeer
    /// A decrypted packet whose source is not in the sending peer's AllowedIPs.
    case notAllowedIP
    /// An outgoing packet whose destination no peer's AllowedIPs covers.
    case noRoute
    /// The session's keys expired or the peer has no usable endpoint.
    case noSession
    /// An initiation whose timestamp is not newer than the last one (a replayed initiation).
    case staleTimestamp
    /// Initiations from one peer faster than the flood limit, or a handshake without a
    /// valid cookie while under load.
    case rateLimited
    /// The queue of packets waiting for a handshake was full.
    case queueFull
    /// The kernel refused a decrypted packet written to the TUN interface.
    case tunRefused
}
