/// DNS compares names without regard to ASCII case (RFC 4343); other bytes are as they are.
public enum ASCIICase {
    /// Inlinable: the DNS proxy lowers every byte of every name it looks up.
    @inlinable
    public static func lower(_ byte: UInt8) -> UInt8 {
        byte &- 0x41 < 26 ? byte | 0x20 : byte
    }
}
