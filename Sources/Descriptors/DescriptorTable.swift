/// Descriptors owned by number: for a service that keeps many at once (connections,
/// sockets in a poll set, marked files) in tables keyed by their numbers. Each closes once:
/// when the table closes it, or with the table.
public struct DescriptorTable: ~Copyable {
    private var open: Set<Int32> = []

    public init() {}

    deinit {
        for raw in open { FileDescriptor(adopting: raw).close() }
    }

    /// Takes `descriptor` over; its number names it here from now on.
    @discardableResult
    public mutating func insert(_ descriptor: consuming FileDescriptor) -> DescriptorNumber {
        let raw = descriptor.release()
        open.insert(raw)
        return DescriptorNumber(borrowing: raw)
    }

    public func contains(_ number: DescriptorNumber) -> Bool { open.contains(number.raw) }

    /// Closes the descriptor `number` if the table holds it.
    public mutating func close(_ number: DescriptorNumber) {
        guard open.remove(number.raw) != nil else { return }
        FileDescriptor(adopting: number.raw).close()
    }

    /// Hands the descriptor back to a single owner (nil if the table does not hold it).
    public mutating func take(_ number: DescriptorNumber) -> FileDescriptor? {
        guard open.remove(number.raw) != nil else { return nil }
        return FileDescriptor(adopting: number.raw)
    }

    public mutating func closeAll() {
        for raw in open { FileDescriptor(adopting: raw).close() }
        open = []
    }
}
