/// A descriptor's number without its ownership: what a poll set, a table of connections or
/// a kernel request names while the descriptor's owner (a `FileDescriptor`, a
/// `DescriptorTable`, a C library) keeps it open. Closing goes through the owner.
public struct DescriptorNumber: Hashable, Sendable, CustomStringConvertible {
    public let raw: Int32

    /// The number of a descriptor someone else owns (a C library's, such as sd-bus's).
    public init(borrowing raw: Int32) { self.raw = raw }

    public var description: String { String(raw) }
}

extension FileDescriptor {
    /// Its number, for a table or a poll set; valid while this owner lives.
    public var number: DescriptorNumber { DescriptorNumber(borrowing: raw) }
}
